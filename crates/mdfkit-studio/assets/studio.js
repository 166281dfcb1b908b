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
