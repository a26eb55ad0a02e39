/* The book's own script (tools/bookext.py adds it to every page of both editions, after the theme's).
   tests/browser/test_pages.py runs axe-core (WCAG 2.1 A and AA) on every page, and this is part of what
   makes it pass.

   Keyboard users can scroll every box that scrolls sideways (WCAG 2.1.1, axe's
   scrollable-region-focusable). book.css makes wide tables (lib.table's included), display math, code
   blocks and cell outputs scroll inside their own box instead of the page; whether one does depends on
   the width of the window. A box that scrolls gets tabindex="0" (Tab reaches it, the arrow keys then
   scroll it; book.css draws its focus outline), and loses it again when a wider window no longer makes
   it scroll, so that boxes that fit add no stop to the Tab order. pydata-sphinx-theme does the same for
   the boxes it knows (pre, .cell_output > .output, .pst-scrollable-table-container); this covers the
   ones book.css adds, and leaves an element alone whose tabindex someone else set. */
(() => {
  "use strict";
  const BOXES = [
    ".bd-article table",
    ".bd-article div.math",
    ".bd-article mjx-container",
    ".bd-article .cell_output",
    ".bd-article div.highlight",
    ".bd-article .pst-scrollable-table-container",
  ].join(", ");
  const OURS = "data-book-scroll-stop";

  const scrolls = (el) => {
    const style = getComputedStyle(el);
    const can = (overflow) => overflow === "auto" || overflow === "scroll";
    return (can(style.overflowX) && el.scrollWidth > el.clientWidth + 1) ||
           (can(style.overflowY) && el.scrollHeight > el.clientHeight + 1);
  };

  const update = (el) => {
    if (el.hasAttribute("tabindex") && !el.hasAttribute(OURS)) return;   // someone else's (MathJax, the theme)
    if (scrolls(el)) {
      el.setAttribute("tabindex", "0");
      el.setAttribute(OURS, "");
    } else if (el.hasAttribute(OURS)) {
      el.removeAttribute("tabindex");
      el.removeAttribute(OURS);
    }
  };

  // A box changes size with the window, and a code cell's source appears when its <details> opens.
  const watched = new WeakSet();
  const resized = new ResizeObserver((entries) => entries.forEach((e) => update(e.target)));
  const scan = () => {
    for (const el of document.querySelectorAll(BOXES)) {
      update(el);
      if (!watched.has(el)) {
        watched.add(el);
        resized.observe(el);
      }
    }
  };

  const start = () => {
    scan();
    // MathJax typesets after this: its display math is only then as wide as it will be.
    const mj = window.MathJax && window.MathJax.startup && window.MathJax.startup.promise;
    if (mj) mj.then(scan, () => {});
    window.addEventListener("load", scan);
    document.addEventListener("toggle", scan, true);   // <details> of the hidden code cells
  };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
