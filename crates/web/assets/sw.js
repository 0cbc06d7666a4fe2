// plangate's service worker. A push carries only an opaque note id
// ({"n": "<64 hex>"}), never plan text: the worker exchanges it for the
// card over the page (GET /push/n/<id>, with the page's session cookie)
// and shows the plan's title and risk, with Approve / Request changes
// buttons when the plan's policy allows one tap, else none. A button
// POSTs /push/n/<id>; a tap on the notification itself opens the plan
// page (Open). A note the server refuses (another person's, decided since,
// signed out) shows a notification that says to open plangate.
"use strict";

self.addEventListener("install", function () { self.skipWaiting(); });
self.addEventListener("activate", function (event) { event.waitUntil(self.clients.claim()); });

var LABELS = { approve: "Approve", request_changes: "Request changes", open: "Open" };

// The card of a push's payload: {n, title, risk, actions, url}.
function cardOf(data) {
  var n = data && typeof data.n === "string" && /^[0-9a-f]{64}$/.test(data.n) ? data.n : null;
  if (!n) return Promise.reject(new Error("no note id"));
  return fetch("/push/n/" + n, { credentials: "same-origin", cache: "no-store" }).then(function (r) {
    if (!r.ok) throw new Error("refused (" + r.status + ")");
    return r.json();
  }).then(function (card) { card.n = n; return card; });
}

// Show the notification of a push's payload.
function show(data) {
  return cardOf(data).then(function (card) {
    return self.registration.showNotification(card.title, {
      body: "Risk: " + card.risk + ". Waiting for your decision.",
      tag: "plangate-" + card.n,
      icon: "/web/icon-192.png",
      requireInteraction: true,
      data: { n: card.n, url: card.url },
      // Open is the tap on the notification itself: browsers show two
      // buttons at most (Chrome's Notification.maxActions), kept for the decisions.
      actions: card.actions.filter(function (a) { return a !== "open"; })
        .map(function (a) { return { action: a, title: LABELS[a] || a }; })
    });
  }, function () {
    return self.registration.showNotification("A plan waits in plangate", {
      body: "Open plangate to read it.", tag: "plangate-open", data: { url: "/" }
    });
  });
}

// What a notification's button does: decide (approve, request_changes)
// through the page, or open the plan page. Resolves to the server's answer.
function act(n, action, url) {
  if (action === "approve" || action === "request_changes") {
    return fetch("/push/n/" + n, {
      method: "POST", credentials: "same-origin",
      headers: { "content-type": "application/json" }, body: JSON.stringify({ action: action })
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (d) { d.status = r.status; return d; });
    });
  }
  return self.clients.openWindow(url || "/").then(function () { return { status: 200, opened: url || "/" }; });
}

self.addEventListener("push", function (event) {
  var data = null;
  try { data = event.data ? event.data.json() : null; } catch (e) { data = null; }
  event.waitUntil(show(data));
});

self.addEventListener("notificationclick", function (event) {
  var d = event.notification.data || {};
  event.notification.close();
  event.waitUntil(act(d.n, event.action || "open", d.url));
});

// The page's own tools (a same-origin page only can message its worker):
// {act: {n, action, url}} runs exactly what a notification's button runs,
// and answers on the message's port.
self.addEventListener("message", function (event) {
  var m = event.data || {};
  if (!m.act || !event.ports[0]) return;
  var port = event.ports[0];
  event.waitUntil(act(m.act.n, m.act.action, m.act.url).then(function (d) { port.postMessage(d); },
    function (e) { port.postMessage({ status: 0, error: String(e) }); }));
});
