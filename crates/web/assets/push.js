// plangate: the installable page and Web Push. Registers the service
// worker (/sw.js) on every page, so the page installs to a home screen;
// for a signed-in person, "Notify this device" (#push-subscribe) asks for
// notifications, subscribes with the server's VAPID key (GET /push/key)
// and stores the subscription (POST /push/subscription); a device that
// subscribed before stores it again on every visit, renewing it. A page where
// push is off (no [push] on the server: /push/key answers 404) shows no
// button. Every text is set with textContent, never as HTML.
(function () {
  "use strict";
  function unb64u(text) {
    var s = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4));
    var bytes = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
    return bytes;
  }
  function say(text) {
    var status = document.getElementById("push-status");
    if (status) status.textContent = text;
  }
  // Store a subscription (PushSubscription.toJSON()) for the signed-in person.
  function save(subscription) {
    return fetch("/push/subscription", {
      method: "POST", credentials: "same-origin",
      headers: { "content-type": "application/json" }, body: JSON.stringify(subscription)
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (d) {
        if (!r.ok) throw new Error(d.error || ("refused (" + r.status + ")"));
        return d;
      });
    });
  }
  function subscribe(registration, key) {
    return Notification.requestPermission().then(function (permission) {
      if (permission !== "granted") throw new Error("notifications are blocked for this site");
      return registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: unb64u(key) });
    }).then(function (subscription) { return save(subscription.toJSON()); });
  }
  // For tests and tools: the page's own calls.
  window.plangatePush = { save: save, registration: null };
  if (!("serviceWorker" in navigator)) return;
  var registered = navigator.serviceWorker.register("/sw.js", { scope: "/" }).then(function (registration) {
    window.plangatePush.registration = registration;
    return registration;
  });
  var button = document.getElementById("push-subscribe");
  if (!button || !("PushManager" in window)) return;
  fetch("/push/key", { credentials: "same-origin" }).then(function (r) {
    if (!r.ok) return null;
    return r.json();
  }).then(function (d) {
    if (!d || !d.public_key) return;
    button.hidden = false;
    // A device subscribed before renews its subscription (and its expiry)
    // each time the page is opened on it.
    if (Notification.permission === "granted") {
      registered.then(function (registration) { return registration.pushManager.getSubscription(); })
        .then(function (subscription) {
          if (subscription) return save(subscription.toJSON()).then(function () { say("Notifications are on for this device."); });
        }).catch(function () {});
    }
    button.addEventListener("click", function () {
      say("Subscribing…");
      registered.then(function (registration) { return subscribe(registration, d.public_key); })
        .then(function () { say("This device gets a notification for each plan that waits for you."); })
        .catch(function (e) { say("Not subscribed: " + e.message); });
    });
  }).catch(function () {});
})();
