// strata report: inlined into the page by report.rs. The page is complete without it; the
// script only adds the toolbar (filters, expand/collapse) and the replacement highlight.
// It reads nothing from the network and no log text: only ids, classes and data attributes.
(function () {
  "use strict";
  var toolbar = document.getElementById("toolbar");
  var body = document.body;

  function filter(cls, label) {
    var box = document.createElement("label");
    box.className = "tb";
    var input = document.createElement("input");
    input.type = "checkbox";
    input.checked = true;
    input.addEventListener("change", function () {
      body.classList.toggle("hide-" + cls, !input.checked);
    });
    box.appendChild(input);
    box.appendChild(document.createTextNode(label));
    toolbar.appendChild(box);
  }

  function button(label, action) {
    var b = document.createElement("button");
    b.type = "button";
    b.className = "tb";
    b.textContent = label;
    b.addEventListener("click", action);
    toolbar.appendChild(b);
  }

  function turns(open) {
    var all = document.querySelectorAll("details.turn");
    for (var i = 0; i < all.length; i++) all[i].open = open;
  }

  function reveal(el) {
    for (var p = el.parentElement; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") p.open = true;
    }
  }

  // Highlights replacement `seq`: its span in the chart, its table row, the rows it shadowed
  // and its own row, then scrolls to the first shadowed row (or the replacing one).
  function highlight(seq) {
    var on = document.querySelectorAll(".on");
    for (var i = 0; i < on.length; i++) on[i].classList.remove("on");
    var marked = document.querySelectorAll('[data-rep="' + seq + '"], li[data-by="' + seq + '"]');
    for (var j = 0; j < marked.length; j++) {
      var el = marked[j];
      if (el.tagName === "A") continue;
      el.classList.add("on");
    }
    var own = document.getElementById("e" + seq);
    if (own) own.classList.add("on");
    var first = document.querySelector('li[data-by="' + seq + '"]') || own;
    if (first) {
      reveal(first);
      first.scrollIntoView({ block: "center" });
    }
  }

  if (toolbar) {
    filter("v", "surface");
    filter("s", "shadowed");
    filter("l", "log only");
    button("expand all", function () { turns(true); });
    button("collapse all", function () { turns(false); });
  }

  document.addEventListener("click", function (event) {
    var target = event.target.closest ? event.target.closest("[data-rep]") : null;
    if (!target) return;
    var seq = target.getAttribute("data-rep");
    if (target.tagName === "A" && target.closest("li")) return;
    event.preventDefault();
    highlight(seq);
  });

  // Following a link to an event inside a collapsed turn opens the turn first.
  function openTarget() {
    var id = decodeURIComponent(location.hash.slice(1));
    var el = id && document.getElementById(id);
    if (el) {
      reveal(el);
      el.scrollIntoView({ block: "center" });
    }
  }
  window.addEventListener("hashchange", openTarget);
  if (location.hash) openTarget();

  document.documentElement.setAttribute("data-js", "ready");
})();
