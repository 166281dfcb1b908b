// mdfkit studio: the one script. Hovering a field (a table row or a byte of the hex view)
// highlights every element carrying the same data-field, so bytes and meanings find each other.
"use strict";
document.addEventListener("mouseover", (event) => {
  const target = event.target.closest("[data-field]");
  for (const el of document.querySelectorAll(".hl")) el.classList.remove("hl");
  if (!target) return;
  for (const el of document.querySelectorAll(`[data-field="${CSS.escape(target.dataset.field)}"]`)) {
    el.classList.add("hl");
  }
});

// The allocation map: a click on a cell opens its page (page n is cell n, COLUMNS a row).
document.addEventListener("click", (event) => {
  const map = event.target.closest("img.map");
  if (!map) return;
  const cell = +map.dataset.cell, columns = +map.dataset.columns;
  const scale = map.naturalWidth / map.clientWidth;
  const x = Math.floor((event.offsetX * scale) / cell), y = Math.floor((event.offsetY * scale) / cell);
  location.href = `/page/${map.dataset.file}:${y * columns + x}`;
});
