// plangate: the plan page's live parts. The page reads fine without this;
// with it, the checklist and the decision update without reloading.
// Server-sent events carry JSON; every text is set with textContent, never
// as HTML.
(function () {
  "use strict";
  var plan = document.getElementById("plan");
  if (!plan || !window.EventSource) return;
  var source = new EventSource(plan.getAttribute("data-events"));
  source.addEventListener("plan", function (e) {
    var d;
    try { d = JSON.parse(e.data); } catch (_) { return; }
    plan.setAttribute("data-status", d.status);
    var status = document.getElementById("status");
    if (status) { status.textContent = d.status; status.className = "badge " + d.status; }
    var list = document.getElementById("steps");
    if (list) {
      var items = list.children;
      d.steps.forEach(function (s, i) {
        var li = items[i];
        if (!li) {
          li = document.createElement("li");
          var m = document.createElement("span"); m.className = "mark";
          var t = document.createElement("span"); t.className = "text";
          var st = document.createElement("span"); st.className = "state";
          li.appendChild(m); li.appendChild(document.createTextNode(" ")); li.appendChild(t); li.appendChild(st);
          list.appendChild(li);
        }
        li.className = "step " + s.status;
        var mark = li.querySelector(".mark"); if (mark) mark.textContent = s.mark;
        var text = li.querySelector(".text"); if (text) text.textContent = s.text;
        var state = li.querySelector(".state"); if (state) state.textContent = " (" + s.status.replace("_", " ") + ")";
      });
      while (list.children.length > d.steps.length) list.removeChild(list.lastElementChild);
    }
    if (d.status !== "pending") {
      var actions = document.getElementById("actions");
      if (actions) actions.parentNode.removeChild(actions);
      var receipt = document.getElementById("receipt");
      if (receipt && d.receipt) { receipt.textContent = d.receipt; receipt.hidden = false; }
    }
    if (d.final) source.close();
  });
})();
