// plangate: passkeys. Registers the signed-in person's passkey
// (#register-passkey) and confirms an approval with it (#confirm-passkey),
// through the browser's WebAuthn API; the server checks everything. Every
// text is set with textContent, never as HTML.
(function () {
  "use strict";
  function b64u(buffer) {
    var bytes = new Uint8Array(buffer), s = "";
    for (var i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
    return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }
  function unb64u(text) {
    var s = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4));
    var bytes = new Uint8Array(s.length);
    for (var i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
    return bytes.buffer;
  }
  function say(text) {
    var status = document.getElementById("passkey-status");
    if (status) status.textContent = text;
  }
  function post(url, body) {
    return fetch(url, {
      method: "POST", credentials: "same-origin",
      headers: { "content-type": "application/json" }, body: JSON.stringify(body)
    }).then(function (r) {
      return r.json().catch(function () { return {}; }).then(function (d) {
        if (!r.ok) throw new Error(d.error || ("refused (" + r.status + ")"));
        return d;
      });
    });
  }
  function failed(e) { say("Not done: " + (e && e.message ? e.message : e)); }

  var register = document.getElementById("register-passkey");
  if (register) register.addEventListener("click", function () {
    var csrf = register.getAttribute("data-csrf");
    say("Follow your browser's passkey prompt…");
    post("/passkeys/options", { csrf: csrf }).then(function (o) {
      return navigator.credentials.create({ publicKey: {
        challenge: unb64u(o.challenge), rp: o.rp,
        user: { id: unb64u(o.user.id), name: o.user.name, displayName: o.user.displayName },
        pubKeyCredParams: o.params, timeout: o.timeout, attestation: "none",
        authenticatorSelection: { residentKey: "preferred", userVerification: "required" }
      } });
    }).then(function (c) {
      return post("/passkeys", {
        csrf: csrf, client_data: b64u(c.response.clientDataJSON), attestation: b64u(c.response.attestationObject)
      });
    }).then(function () {
      say("Passkey registered.");
      register.disabled = true;
      document.body.setAttribute("data-passkey", "registered");
    }, failed);
  });

  var confirm = document.getElementById("confirm-passkey");
  if (confirm) confirm.addEventListener("click", function () {
    var csrf = confirm.getAttribute("data-csrf");
    var base = "/p/" + confirm.getAttribute("data-approval") + "/confirm";
    say("Follow your browser's passkey prompt…");
    post(base + "/options", { csrf: csrf }).then(function (o) {
      return navigator.credentials.get({ publicKey: {
        challenge: unb64u(o.challenge), rpId: o.rpId, timeout: o.timeout, userVerification: "required",
        allowCredentials: o.allow.map(function (id) { return { type: "public-key", id: unb64u(id) }; })
      } });
    }).then(function (a) {
      return post(base, {
        csrf: csrf, id: b64u(a.rawId), client_data: b64u(a.response.clientDataJSON),
        authenticator_data: b64u(a.response.authenticatorData), signature: b64u(a.response.signature)
      });
    }).then(function (d) {
      say(d.said || "Confirmed.");
      document.body.setAttribute("data-passkey", "confirmed");
    }, failed);
  });
})();
