/* Adjudication case page: image viewer (zoom/pan via viewBox, brightness/contrast,
 * layer toggles, box redraw), verdict form helpers, visible-time tracking and
 * keyboard shortcuts. Plain script, no dependencies; every feature silently does
 * nothing when its elements are missing (e.g. auditors see no #verdict-form). */
(() => {
  'use strict';

  function init() {
    const byId = (id) => document.getElementById(id);
    const clamp = (v, lo, hi) => Math.min(hi, Math.max(lo, v));

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

    /* ---------- viewer: zoom / pan ---------- */
    const viewer = byId('case-viewer'), stage = byId('viewer-stage'), svg = byId('case-svg');
    const image = byId('case-image'), zoomLabel = byId('zoom-level');
    const MIN_ZOOM = 1, MAX_ZOOM = 16, STEP = 1.25;

    const vb0 = svg && svg.viewBox && svg.viewBox.baseVal;
    const W = parseFloat(viewer && viewer.dataset.width) || (vb0 && vb0.width) || 0;
    const H = parseFloat(viewer && viewer.dataset.height) || (vb0 && vb0.height) || 0;
    const hasViewer = !!svg && W > 0 && H > 0;
    let zoom = 1;
    let vb = { x: 0, y: 0, width: W, height: H };

    function applyViewBox() {
      svg.setAttribute('viewBox', [vb.x, vb.y, vb.width, vb.height].map((n) => +n.toFixed(3)).join(' '));
      if (zoomLabel) zoomLabel.textContent = Math.round(zoom * 100) + '%';
    }
    // Zoom to `level`, keeping image point (px, py) fixed on screen (default: view centre).
    function zoomTo(level, px, py) {
      if (!hasViewer) return zoom;
      level = clamp(Number(level) || 1, MIN_ZOOM, MAX_ZOOM);
      if (px == null || py == null) { px = vb.x + vb.width / 2; py = vb.y + vb.height / 2; }
      const fx = (px - vb.x) / vb.width, fy = (py - vb.y) / vb.height;
      const w = W / level, h = H / level;
      zoom = level;
      vb = { x: clamp(px - fx * w, 0, W - w), y: clamp(py - fy * h, 0, H - h), width: w, height: h };
      applyViewBox();
      return zoom;
    }
    const zoomBy = (factor, px, py) => hasViewer && (zoomTo(zoom * factor, px, py), true);
    const resetZoom = () => hasViewer && (zoomTo(1), true);

    // Screen (client) coordinates -> image pixel coordinates (= svg user units).
    function clientToImage(cx, cy) {
      const ctm = svg.getScreenCTM();
      if (!ctm) return null;
      const pt = typeof DOMPoint === 'function' ? new DOMPoint(cx, cy) : Object.assign(svg.createSVGPoint(), { x: cx, y: cy });
      return pt.matrixTransform(ctm.inverse());
    }

    /* ---------- box redraw ---------- */
    const drawToggle = byId('draw-toggle'), drawBox = byId('draw-box');
    const canDraw = hasViewer && answerType === 'box' && !!drawBox;
    let drawing = false;
    function setDrawing(on) {
      if (!canDraw) return false;
      drawing = !!on;
      if (stage) stage.classList.toggle('drawing', drawing);
      if (drawToggle) drawToggle.setAttribute('aria-pressed', String(drawing));
      if (drawing) pickVerdict('corrected', false);
      return true;
    }
    function imagePoint(e) {
      const p = clientToImage(e.clientX, e.clientY);
      return p && { x: clamp(Math.round(p.x), 0, W), y: clamp(Math.round(p.y), 0, H) };
    }
    // Ordered, whole-pixel box of at least 1x1 inside the image.
    function normBox(ax, ay, bx, by) {
      let x0 = Math.min(ax, bx), x1 = Math.max(ax, bx), y0 = Math.min(ay, by), y1 = Math.max(ay, by);
      if (x1 - x0 < 1) { if (x0 + 1 <= W) x1 = x0 + 1; else x0 = x1 - 1; }
      if (y1 - y0 < 1) { if (y0 + 1 <= H) y1 = y0 + 1; else y0 = y1 - 1; }
      return [x0, y0, x1, y1];
    }
    function showBox(b) {
      const attrs = { x: b[0], y: b[1], width: b[2] - b[0], height: b[3] - b[1], visibility: 'visible' };
      for (const [k, v] of Object.entries(attrs)) drawBox.setAttribute(k, v);
    }
    // Show the box stored in #box-answer (e.g. after a server-side form error), else hide the rect.
    function restoreBox() {
      let prev = null;
      try { prev = boxAnswer && boxAnswer.value ? JSON.parse(boxAnswer.value) : null; } catch (err) { /* malformed */ }
      if (Array.isArray(prev) && prev.length === 4 && prev.every(Number.isFinite)) showBox(prev);
      else drawBox.setAttribute('visibility', 'hidden');
    }
    if (canDraw) {
      if (drawToggle) drawToggle.hidden = false;
      if (drawToggle) drawToggle.addEventListener('click', () => setDrawing(!drawing));
      setDrawing(false); // sets aria-pressed="false"
      restoreBox();
    }

    /* ---------- mouse: wheel zoom, drag pan / draw ---------- */
    const surface = stage || svg;
    let drag = null; // { mode: 'pan', lastX, lastY } | { mode: 'draw', x0, y0 }
    if (hasViewer && surface) {
      surface.addEventListener('wheel', (e) => {
        e.preventDefault();
        if (!e.deltaY) return;
        const p = clientToImage(e.clientX, e.clientY);
        zoomBy(e.deltaY < 0 ? STEP : 1 / STEP, p && p.x, p && p.y);
      }, { passive: false });

      surface.addEventListener('mousedown', (e) => {
        if (e.button !== 0) return;
        const p = drawing && imagePoint(e);
        if (drawing && !p) return;
        drag = drawing ? { mode: 'draw', x0: p.x, y0: p.y } : { mode: 'pan', lastX: e.clientX, lastY: e.clientY };
        if (drawing) showBox(normBox(p.x, p.y, p.x, p.y));
        e.preventDefault(); // no text selection / native image drag
      });
      window.addEventListener('mousemove', (e) => {
        if (!drag) return;
        if (drag.mode === 'draw') {
          const p = imagePoint(e);
          if (p) showBox(normBox(drag.x0, drag.y0, p.x, p.y));
          return;
        }
        const ctm = svg.getScreenCTM();
        if (!ctm || !ctm.a || !ctm.d) return;
        vb.x = clamp(vb.x - (e.clientX - drag.lastX) / ctm.a, 0, W - vb.width);
        vb.y = clamp(vb.y - (e.clientY - drag.lastY) / ctm.d, 0, H - vb.height);
        drag.lastX = e.clientX; drag.lastY = e.clientY;
        applyViewBox();
      });
      window.addEventListener('mouseup', (e) => {
        if (!drag) return;
        const d = drag;
        drag = null;
        if (d.mode !== 'draw') return;
        const p = imagePoint(e) || { x: d.x0, y: d.y0 };
        const b = normBox(d.x0, d.y0, p.x, p.y);
        showBox(b);
        if (boxAnswer) boxAnswer.value = JSON.stringify(b);
        if (boxAnswer) boxAnswer.dispatchEvent(new Event('change', { bubbles: true }));
        setDrawing(false);
      });
      zoomTo(1);
    }
    for (const [id, fn] of [['zoom-in', () => zoomBy(STEP)], ['zoom-out', () => zoomBy(1 / STEP)], ['zoom-reset', resetZoom]]) {
      const btn = byId(id);
      if (btn) btn.addEventListener('click', fn);
    }

    /* ---------- brightness / contrast ---------- */
    const bright = byId('brightness'), contrast = byId('contrast');
    function applyFilter() {
      if (!image) return;
      image.style.filter = `brightness(${bright ? bright.value : 100}%) contrast(${contrast ? contrast.value : 100}%)`;
    }
    [bright, contrast].forEach((el) => el && el.addEventListener('input', applyFilter));
    applyFilter();
    function resetView() {
      if (bright) bright.value = 100;
      if (contrast) contrast.value = 100;
      applyFilter();
      resetZoom();
      return !!(image || hasViewer);
    }

    /* ---------- layer toggles ---------- */
    const layerToggles = Array.from(document.querySelectorAll('.layer-toggle'));
    function applyLayer(toggle) {
      const name = toggle.getAttribute('data-layer');
      document.querySelectorAll('g.layer').forEach((g) => {
        if (g.getAttribute('data-layer') === name) g.style.display = toggle.checked ? '' : 'none';
      });
    }
    layerToggles.forEach((t) => { t.addEventListener('change', () => applyLayer(t)); applyLayer(t); });
    function toggleGold() {
      const gold = layerToggles.find((t) => t.getAttribute('data-layer') === 'gold');
      if (gold) setChecked(gold, !gold.checked);
      return !!gold;
    }
    function toggleModels() {
      const models = layerToggles.filter((t) => /^m\d+$/.test(t.getAttribute('data-layer') || ''));
      if (!models.length) return false;
      const show = !models.some((t) => t.checked); // any visible -> hide all, else show all
      models.forEach((t) => setChecked(t, show));
      return true;
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
    function toggleHelp() {
      const help = byId('shortcut-help');
      if (help) help.hidden = !help.hidden;
      return !!help;
    }
    // Handlers return true when they acted (then the key's default is prevented).
    const shortcuts = {
      Enter: submitForm, n: goNext, '?': toggleHelp, d: () => setDrawing(!drawing),
      g: toggleGold, m: toggleModels, r: resetView,
      '+': () => zoomBy(STEP), '=': () => zoomBy(STEP), '-': () => zoomBy(1 / STEP), 0: resetZoom,
    };
    const VERDICT_KEYS = { c: 'confirmed', e: 'corrected', a: 'ambiguous', f: 'flawed' };
    for (const [k, v] of Object.entries(VERDICT_KEYS)) shortcuts[k] = () => pickVerdict(v);
    for (let i = 1; i <= 9; i++) shortcuts[i] = () => pickOption(i - 1);
    const REPEATABLE = new Set(['+', '=', '-']);

    document.addEventListener('keydown', (e) => {
      if (e.defaultPrevented || e.isComposing) return;
      const target = e.target;
      const typing = isTypingTarget(target);
      if (e.key === 'Escape') {
        if (typing) { target.blur(); return; }
        if (drawing) { drag = null; setDrawing(false); restoreBox(); }
        const help = byId('shortcut-help');
        if (help) help.hidden = true;
        return;
      }
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        if (submitForm()) e.preventDefault();
        return;
      }
      if (typing || e.ctrlKey || e.metaKey || e.altKey) return;
      const key = e.key && e.key.length === 1 ? e.key.toLowerCase() : e.key;
      const handler = Object.prototype.hasOwnProperty.call(shortcuts, key) && shortcuts[key];
      if (!handler) return;
      // Plain Enter on a focused button/link keeps its native activation.
      if (key === 'Enter' && target instanceof Element && target.closest('button, a[href], summary, [role="button"]')) return;
      if (e.repeat && !REPEATABLE.has(key)) { e.preventDefault(); return; }
      if (handler(e)) e.preventDefault();
    });

    /* ---------- test hook ---------- */
    window.medr2Case = {
      zoomTo: (level) => zoomTo(level),
      getViewBox: () => (hasViewer ? { x: vb.x, y: vb.y, width: vb.width, height: vb.height } : null),
    };
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
