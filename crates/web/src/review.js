// The claim card's keyboard: keys 1-4 (outside a text field) choose a verdict and move to
// the reason; Ctrl+Enter (or Cmd+Enter) in the reason appends the verdict. The form works
// without this script: it only adds keys. Served by the workbench itself (no inline script).
"use strict";
(function () {
  function ready() {
    var form = document.getElementById("verdict");
    if (!form) {
      return;
    }
    var reason = document.getElementById("reason");
    function hint() {
      var chosen = form.querySelector('input[name="support"]:checked');
      if (chosen && reason) {
        reason.placeholder = chosen.getAttribute("data-hint") || "";
      }
    }
    form.addEventListener("change", hint);
    document.addEventListener("keydown", function (e) {
      var target = e.target;
      var typing =
        target &&
        (target.tagName === "TEXTAREA" ||
          (target.tagName === "INPUT" && target.type === "text"));
      if (typing) {
        if (target === reason && e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
          e.preventDefault();
          form.requestSubmit();
        }
        return;
      }
      if (e.ctrlKey || e.metaKey || e.altKey) {
        return;
      }
      var radio = form.querySelector('input[name="support"][data-key="' + e.key + '"]');
      if (radio) {
        e.preventDefault();
        radio.checked = true;
        hint();
        if (reason) {
          reason.focus();
        }
      }
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", ready);
  } else {
    ready();
  }
})();
