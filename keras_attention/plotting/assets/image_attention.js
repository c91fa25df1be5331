// Behaviour of the page written by keras_attention.plotting.save_image_attention_html:
// reads the weights from the JSON in #ka-data and draws each token's (H', W') grid on
// a canvas of H' x W' pixels that CSS stretches over the image (the browser smooths
// it, as a bilinear upsampling). Gray g = weight / largest weight of the selected
// head, opacity alpha: bright where the token attends. NaN (null) cells are left
// clear and hatched on a second canvas.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("ka-data").textContent);
  var select = document.getElementById("ka-head");
  var targets = document.querySelectorAll(".ka-target");
  var panels = document.querySelectorAll(".ka-panel");
  var pinned = null;

  function grids() { return data.heads[select ? select.selectedIndex : 0].weights; }
  function scale(all) {
    var top = 0;
    all.forEach(function (g) {
      g.forEach(function (r) {
        r.forEach(function (w) { if (w !== null) { top = Math.max(top, w); } });
      });
    });
    return top > 0 ? top : 1;
  }
  function drawGrid(canvas, grid, top) {
    var ctx = canvas.getContext("2d");
    var image = ctx.createImageData(canvas.width, canvas.height);
    grid.forEach(function (r, i) {
      r.forEach(function (w, j) {
        var k = 4 * (i * canvas.width + j);
        var g = w === null ? 0 : Math.round(255 * Math.max(0, Math.min(1, w / top)));
        image.data[k] = g; image.data[k + 1] = g; image.data[k + 2] = g;
        image.data[k + 3] = w === null ? 0 : Math.round(255 * data.alpha);
      });
    });
    ctx.putImageData(image, 0, 0);
  }
  function drawHatch(canvas, grid) {
    var ctx = canvas.getContext("2d"), cell = data.hatch_cell;
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    ctx.strokeStyle = "#8c8c8c"; ctx.lineWidth = 1;
    grid.forEach(function (r, i) {
      r.forEach(function (w, j) {
        if (w !== null) { return; }
        var x = j * cell, y = i * cell;
        ctx.beginPath();
        ctx.moveTo(x, y); ctx.lineTo(x + cell, y + cell);
        ctx.moveTo(x + cell, y); ctx.lineTo(x, y + cell);
        ctx.stroke();
      });
    });
  }
  function show(canvas, hatch, grid, top) {
    canvas.setAttribute("data-top", String(top));
    drawGrid(canvas, grid, top);
    drawHatch(hatch, grid);
  }
  function highlight(row) {
    var all = grids(), top = scale(all);
    var overlay = document.getElementById("ka-overlay");
    var hatch = document.getElementById("ka-hatch");
    if (row === null) {
      overlay.getContext("2d").clearRect(0, 0, overlay.width, overlay.height);
      hatch.getContext("2d").clearRect(0, 0, hatch.width, hatch.height);
      overlay.setAttribute("data-top", "");
    } else { show(overlay, hatch, all[row], top); }
    targets.forEach(function (el, i) { el.classList.toggle("ka-active", i === row); });
    panels.forEach(function (el, i) { el.classList.toggle("ka-active", i === row); });
    document.body.setAttribute("data-active-row", row === null ? "" : String(row));
  }
  function drawPanels() {
    var all = grids(), top = scale(all);
    panels.forEach(function (el, i) {
      show(el.querySelector(".ka-overlay"), el.querySelector(".ka-hatch"), all[i], top);
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
    select.addEventListener("change", function () { drawPanels(); highlight(pinned); });
  }
  // The image is inlined once, in the large view; the panels show the same one.
  var source = document.querySelector("#ka-view .ka-image").src;
  document.querySelectorAll(".ka-panel .ka-image").forEach(function (img) { img.src = source; });
  drawPanels();
  highlight(null);
})();
