/* Adjudication case page: the verdict form, the box answer drawn on the shared viewer
 * (static/js/viewer.js: window/level, zoom, layers and their keys live there), visible-time
 * tracking and the page's keyboard shortcuts. Plain script, no dependencies; every feature
 * silently does nothing when its elements are missing (e.g. auditors see no #verdict-form). */
(() => {
  'use strict';

  function init() {
    const byId = (id) => document.getElementById(id);

    const form = byId('verdict-form');
    const answerType = form ? (form.dataset.answerType || '') : '';
    const errorEl = byId('verdict-error'), submitBtn = byId('verdict-submit');
    const boxAnswer = byId('box-answer'), vCorrected = byId('v-corrected');

    /* ---------- small helpers ---------- */
    // Set a checkbox/radio and fire a bubbling change event so other code reacts.
    function setChecked(input, value) {
      if (!input || input.disabled || input.checked === value) return;
      input.checked = value;
      input.dispatchEvent(new Event('change', { bubbles: true }));
    }
    const flashTimers = new WeakMap();
    function flash(input) {
      const label = input && input.closest('label');
      if (!label) return;
      clearTimeout(flashTimers.get(label));
      label.classList.add('picked');
      flashTimers.set(label, setTimeout(() => label.classList.remove('picked'), 600));
    }
    function pickVerdict(value, highlight = true) {
      const radio = byId('v-' + value);
      if (!radio || radio.disabled) return false;
      setChecked(radio, true);
      if (highlight) flash(radio);
      return true;
    }

    /* ---------- the viewer (templates/_viewer.html, static/js/viewer.js) ---------- */
    // The shared viewer draws the image, its layers and the box tool; this page only connects the
    // box tool to the verdict: a drawn box is the corrected answer (#box-answer) and picks "corrected".
    const viewerRoot = document.querySelector('section.mv');
    const viewer = () => (viewerRoot && window.MedViewer ? window.MedViewer.get(viewerRoot) : null);
    const canDraw = answerType === 'box' && !!boxAnswer && !!(viewerRoot && viewerRoot.querySelector('[data-tool="draw"]'));
    let drawing = false;
    function setDrawing(on) {
      const v = viewer();
      if (!canDraw || !v) return false;
      return v.setTool(on ? 'draw' : 'window') || v.setTool(on ? 'draw' : 'pan');
    }
    // Show the box stored in #box-answer (e.g. after a server-side form error) on the viewer's "drawn" layer.
    function restoreBox() {
      let prev = null;
      try { prev = boxAnswer && boxAnswer.value ? JSON.parse(boxAnswer.value) : null; } catch (err) { /* malformed */ }
      const v = viewer();
      if (!v) return;
      const ok = Array.isArray(prev) && prev.length === 4 && prev.every(Number.isFinite);
      v.setLayerBoxes('drawn', ok ? [{ x0: prev[0], y0: prev[1], x1: prev[2], y1: prev[3], label: 'your box' }] : []);
    }
    if (canDraw) {
      viewerRoot.addEventListener('mv:toolchange', (e) => {
        drawing = e.detail.tool === 'draw';
        if (drawing) pickVerdict('corrected', false);
      });
      viewerRoot.addEventListener('mv:boxdrawn', (e) => {
        const b = e.detail;
        boxAnswer.value = JSON.stringify([b.x0, b.y0, b.x1, b.y1]);
        boxAnswer.dispatchEvent(new Event('change', { bubbles: true }));
        pickVerdict('corrected', false);
      });
      restoreBox();
    }

    /* ---------- time spent (visible time only) ---------- */
    let accumulated = 0;
    let since = document.visibilityState === 'visible' ? performance.now() : null;
    const elapsedSeconds = () => (accumulated + (since === null ? 0 : performance.now() - since)) / 1000;
    document.addEventListener('visibilitychange', () => {
      const now = performance.now();
      if (document.visibilityState === 'visible') { if (since === null) since = now; }
      else if (since !== null) { accumulated += now - since; since = null; }
    });
    const timerEl = byId('timer');
    if (timerEl) {
      const tick = () => {
        const s = Math.floor(elapsedSeconds());
        timerEl.textContent = `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
      };
      tick();
      setInterval(tick, 1000);
    }

    /* ---------- verdict form ---------- */
    const MSG = {
      verdict: 'Choose a verdict first: C confirm, E correct, A ambiguous, F flawed.',
      box: 'Redraw the box first (D).',
      choice: 'Pick the corrected answer (1\u20139).',
      text: 'Enter the corrected answer.',
    };
    const CHOICE_TYPES = ['single_choice', 'yes_no', 'multi_choice'];
    let submitting = false;
    function setSubmitting(on) {
      submitting = on;
      if (submitBtn) submitBtn.disabled = on;
    }

    function showError(msg) {
      if (!errorEl) return;
      errorEl.textContent = msg || '';
      errorEl.hidden = !msg;
    }
    function validationError() {
      const verdict = form.querySelector('input[name="verdict"]:checked');
      if (!verdict) return MSG.verdict;
      if (verdict.value !== 'corrected') return '';
      if (answerType === 'box') return boxAnswer && !boxAnswer.value.trim() ? MSG.box : '';
      if (CHOICE_TYPES.includes(answerType)) {
        return form.querySelector('.answer-option') && !form.querySelector('.answer-option:checked') ? MSG.choice : '';
      }
      const text = answerType === 'short_text' && form.querySelector('input[name="answer_text"]');
      return text && !text.value.trim() ? MSG.text : '';
    }
    function submitForm() {
      if (!form) return false;
      if (typeof form.requestSubmit === 'function') form.requestSubmit();
      else if (form.dispatchEvent(new Event('submit', { cancelable: true }))) form.submit();
      return true;
    }
    function pickOption(index) {
      const opt = (form || document).querySelectorAll('.answer-option')[index];
      if (!opt || opt.disabled) return false;
      setChecked(opt, opt.type === 'checkbox' ? !opt.checked : true);
      setChecked(vCorrected, true);
      flash(opt);
      return true;
    }

    if (form) {
      form.addEventListener('submit', (e) => {
        if (submitting) { e.preventDefault(); return; }
        const timeSpent = byId('time-spent');
        if (timeSpent) timeSpent.value = elapsedSeconds().toFixed(1);
        const msg = validationError();
        if (msg) { e.preventDefault(); showError(msg); return; }
        showError('');
        setSubmitting(true);
        setTimeout(() => { if (e.defaultPrevented) setSubmitting(false); }, 0); // cancelled by another listener
      });
      const onAnswer = (e) => {
        const t = e.target;
        if (t.classList && t.classList.contains('answer-option')) setChecked(vCorrected, true);
        if (e.type === 'input' && t.name === 'answer_text' && t.value.trim()) setChecked(vCorrected, true);
        if (errorEl && !errorEl.hidden && e.type !== 'click') showError(validationError()); // refresh shown error
      };
      ['click', 'change', 'input'].forEach((type) => form.addEventListener(type, onAnswer));
      // Back/forward cache restores a disabled button: re-enable it.
      window.addEventListener('pageshow', (e) => { if (e.persisted) setSubmitting(false); });
    }

    /* ---------- keyboard shortcuts ---------- */
    const TEXT_TYPES = ['text', 'number', 'search', 'email', 'url', 'tel', 'password'];
    function isTypingTarget(el) {
      if (!(el instanceof Element)) return false;
      if (el.isContentEditable || el.tagName === 'TEXTAREA' || el.tagName === 'SELECT') return true;
      return el.tagName === 'INPUT' && TEXT_TYPES.includes((el.type || 'text').toLowerCase());
    }
    function goNext() {
      const next = byId('next-case');
      if (next && next.href) window.location.assign(next.href);
      return !!(next && next.href);
    }
    function toggleHelp() {             // the viewer's list has the page's keys too
      const v = viewer();
      if (v) return v.toggleHelp();
      const help = byId('shortcut-help');
      if (help) help.hidden = !help.hidden;
      return !!help;
    }
    // Handlers return true when they acted (then the key's default is prevented).
    const shortcuts = { Enter: submitForm, n: goNext, '?': toggleHelp, d: () => setDrawing(!drawing) };
    const VERDICT_KEYS = { c: 'confirmed', e: 'corrected', a: 'ambiguous', f: 'flawed' };
    for (const [k, v] of Object.entries(VERDICT_KEYS)) shortcuts[k] = () => pickVerdict(v);
    for (let i = 1; i <= 9; i++) shortcuts[i] = () => pickOption(i - 1);

    document.addEventListener('keydown', (e) => {
      if (e.defaultPrevented || e.isComposing) return;
      const target = e.target;
      const typing = isTypingTarget(target);
      if (e.key === 'Escape') {
        if (typing) { target.blur(); return; }
        const help = byId('shortcut-help');
        if (help) help.hidden = true;
        return;
      }
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        if (submitForm()) e.preventDefault();
        return;
      }
      if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
      if (e.shiftKey && /^[A-Z]$/.test(e.key)) return;   // Shift+letter belongs to the viewer (Shift+F fullscreen)
      const key = e.key && e.key.length === 1 ? e.key.toLowerCase() : e.key;
      const handler = Object.prototype.hasOwnProperty.call(shortcuts, key) && shortcuts[key];
      if (!handler) return;
      // Plain Enter on a focused button/link keeps its native activation.
      if (key === 'Enter' && target instanceof Element && target.closest('button, a[href], summary, [role="button"]')) return;
      if (e.repeat) { e.preventDefault(); return; }
      if (handler(e)) e.preventDefault();
    });
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
