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

// Map legends carry their colours as data (the CSP allows no inline style): paint the swatches.
for (const swatch of document.querySelectorAll(".swatch[data-rgb]")) {
  swatch.style.backgroundColor = `#${swatch.dataset.rgb}`;
}

// A check running in the background: show its progress, then reload to paint its findings.
const progress = document.querySelector("#check-progress[data-running]");
if (progress) {
  const poll = async () => {
    const state = (await (await fetch("/map.json?mode=damage")).json()).check;
    if (state.running) {
      progress.textContent = `check: ${state.pages_done} of ${state.pages_total} pages…`;
      setTimeout(poll, 500);
    } else {
      location.reload();
    }
  };
  setTimeout(poll, 500);
}
