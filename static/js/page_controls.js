/* Small page controls declared in the markup, so templates carry no inline event handlers (the
 * Content-Security-Policy allows scripts from our own files only: docs/security.md, "Browser protections").
 * Loaded on every page by templates/base.html.
 *
 *   <input type="checkbox" data-check-all="input[name=ids]">   checks / unchecks those boxes in the page
 *   <select data-uncheck-on-change="input[name=models]">       unchecks those boxes in its form on change
 *   <a href="#" data-toggle-hidden="shortcut-help">             shows / hides the element with that id
 *   <a href="#" data-history-back>                              goes back to the previous page
 */
(function () {
  'use strict';
  document.addEventListener('click', (e) => {
    const el = e.target instanceof Element ? e.target : null;
    if (!el) return;
    const all = el.closest('[data-check-all]');
    if (all && all === el) {
      document.querySelectorAll(all.dataset.checkAll).forEach((c) => { c.checked = all.checked; });
    }
    const toggle = el.closest('[data-toggle-hidden]');
    if (toggle) {
      const target = document.getElementById(toggle.dataset.toggleHidden);
      if (target) target.hidden = !target.hidden;
      e.preventDefault();
    }
    if (el.closest('[data-history-back]')) {
      history.back();
      e.preventDefault();
    }
  });
  document.addEventListener('change', (e) => {
    const el = e.target instanceof Element ? e.target.closest('[data-uncheck-on-change]') : null;
    if (!el || !el.form) return;
    el.form.querySelectorAll(el.dataset.uncheckOnChange).forEach((c) => { c.checked = false; });
  });
})();
