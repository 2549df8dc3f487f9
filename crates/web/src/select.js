// veredicto workbench: a passage selected inside a text (an element of class
// `passage-text`, with `data-doc` and, when its place in the document is known,
// `data-start`) fills the evidence span's fields of the page's form of class `span`:
// `start`/`end` in Unicode scalar values of the document (end exclusive) when the text's
// start is known, else a `quote`. Without this script the fields are typed.
"use strict";
(function () {
  function scalars(s) {
    return Array.from(s).length;
  }
  function fill(el, range) {
    var form = document.querySelector("form.span");
    if (!form) return;
    var before = document.createRange();
    before.setStart(el, 0);
    before.setEnd(range.startContainer, range.startOffset);
    var from = scalars(before.toString());
    var picked = range.toString();
    var len = scalars(picked);
    if (len === 0) return;
    var set = function (name, value) {
      var input = form.querySelector("[name=" + name + "]");
      if (input) input.value = value;
    };
    set("doc_id", el.dataset.doc || "");
    if (el.dataset.start !== undefined && el.dataset.start !== "") {
      var base = parseInt(el.dataset.start, 10);
      set("start", String(base + from));
      set("end", String(base + from + len));
      set("quote", "");
    } else {
      set("start", "");
      set("end", "");
      set("quote", picked);
    }
  }
  document.addEventListener("mouseup", function () {
    var sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return;
    var range = sel.getRangeAt(0);
    var el = range.commonAncestorContainer;
    if (el.nodeType !== 1) el = el.parentElement;
    el = el && el.closest(".passage-text");
    if (!el || !el.dataset.doc) return;
    fill(el, range);
  });
})();
