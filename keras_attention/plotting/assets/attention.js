// Behaviour of the page written by keras_attention.plotting.save_attention_html:
// reads the weights from the JSON in #ka-data and shades tokens and cells,
// alpha = weight / largest weight of the selected matrix, in blue.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("ka-data").textContent);
  var select = document.getElementById("ka-head");
  var targets = document.querySelectorAll(".ka-target");
  var sources = document.querySelectorAll(".ka-source");
  var cells = document.querySelectorAll(".ka-cell");
  var pinned = null;

  function matrix() { return data.heads[select ? select.selectedIndex : 0].weights; }
  function scale(m) {
    var top = 0;
    m.forEach(function (r) {
      r.forEach(function (w) { if (w !== null) { top = Math.max(top, w); } });
    });
    return top > 0 ? top : 1;
  }
  function shade(el, w, top) {
    // null: a non-finite weight (NaN), drawn as a marked empty cell.
    el.classList.toggle("ka-nan", w === null);
    if (w === null) {
      el.style.backgroundColor = ""; el.style.color = "";
      el.setAttribute("data-weight", "NaN");
      return;
    }
    var a = Math.max(0, Math.min(1, w / top));
    el.style.backgroundColor = "rgba(31, 119, 180, " + a.toFixed(4) + ")";
    el.style.color = a > 0.6 ? "#fff" : "";
    el.setAttribute("data-weight", String(w));
  }
  function highlight(row) {
    var m = matrix(), top = scale(m);
    sources.forEach(function (el, col) {
      if (row === null) {
        el.style.backgroundColor = ""; el.style.color = "";
        el.setAttribute("data-weight", "");
      } else { shade(el, m[row][col], top); }
    });
    targets.forEach(function (el, i) { el.classList.toggle("ka-active", i === row); });
    document.querySelectorAll("#ka-matrix tbody tr").forEach(function (tr, i) {
      tr.classList.toggle("ka-active", i === row);
    });
    document.body.setAttribute("data-active-row", row === null ? "" : String(row));
  }
  function drawMatrix() {
    var m = matrix(), top = scale(m);
    cells.forEach(function (el) {
      shade(el, m[+el.dataset.row][+el.dataset.col], top);
    });
  }
  targets.forEach(function (el) {
    var row = +el.dataset.row;
    el.addEventListener("mouseenter", function () { highlight(row); });
    el.addEventListener("focus", function () { highlight(row); });
    el.addEventListener("mouseleave", function () { highlight(pinned); });
    el.addEventListener("blur", function () { highlight(pinned); });
    el.addEventListener("click", function () {
      pinned = pinned === row ? null : row; highlight(pinned);
    });
  });
  if (select) {
    select.addEventListener("change", function () {
      drawMatrix();
      highlight(pinned);
    });
  }
  drawMatrix();
  highlight(null);
})();
