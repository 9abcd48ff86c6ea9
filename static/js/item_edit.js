/* The item edit form (templates/annotation/item_edit.html, docs/curation.md "Editing an item").
 *
 * - Choice questions: the gold is clicked. Editing the options re-lists the choices as you type, keeping
 *   the checked one (by its text, or by its line when that line's text was just corrected).
 * - Box questions: drawing on the viewer fills the four fields (the viewer sends `mv:boxdrawn` with the
 *   box in image pixels); typing in the fields shows the box on the viewer's "drawn" layer.
 * Without the viewer (or without JavaScript) the fields are typed and the server checks them. */
(function () {
  'use strict';
  const form = document.getElementById('item-edit-form');
  if (!form) return;
  const width = Number(form.dataset.imageWidth), height = Number(form.dataset.imageHeight);

  /* ---------------- choices follow the options ---------------- */
  const optionsBox = form.querySelector('textarea[name="options"]');
  const list = form.querySelector('.gold-choices');
  if (optionsBox && list) {
    const kind = list.dataset.inputType || 'radio';
    const lines = () => optionsBox.value.split('\n').map((s) => s.trim()).filter(Boolean);
    let last = lines();
    const rebuild = () => {
      const now = lines();
      const inputs = Array.from(list.querySelectorAll('input[name="gold_answer"]'));
      const checkedText = new Set(inputs.filter((i) => i.checked).map((i) => i.value));
      // a line whose text changed in place keeps its tick (a typo fixed in the gold option)
      const checkedIndex = new Set(last.map((t, n) => (checkedText.has(t) ? n : -1)).filter((n) => n >= 0));
      list.textContent = '';
      if (!now.length) {
        const li = document.createElement('li');
        li.className = 'muted small';
        li.textContent = 'Write the options above first.';
        list.appendChild(li);
      }
      now.forEach((text, n) => {
        const li = document.createElement('li'), label = document.createElement('label');
        const input = document.createElement('input'), letter = document.createElement('span');
        const body = document.createElement('span');
        input.type = kind;
        input.name = 'gold_answer';
        input.value = text;
        input.checked = checkedText.has(text) || (checkedIndex.has(n) && !now.includes(last[n]));
        letter.className = 'choice-letter';
        letter.textContent = (n < 26 ? String.fromCharCode(65 + n) : String(n + 1)) + '.';
        body.className = 'choice-text';
        body.textContent = text;
        label.append(input, ' ', letter, ' ', body);
        li.appendChild(label);
        list.appendChild(li);
      });
      last = now;
    };
    optionsBox.addEventListener('input', rebuild);
  }

  /* ---------------- a box drawn on the viewer, or typed ---------------- */
  const corners = ['x0', 'y0', 'x1', 'y1'].map((k) => form.querySelector(`input[name="box_${k}"]`));
  if (corners.some((c) => !c)) return;
  const hint = form.querySelector('.box-hint');
  const hintText = hint ? hint.innerHTML : '';
  const viewerRoot = () => document.querySelector('section.mv');
  const viewer = () => (window.MedViewer && viewerRoot() ? window.MedViewer.get(viewerRoot()) : null);
  const fmt = (v) => String(Math.round(v * 10) / 10);
  const read = () => corners.map((c) => (c.value.trim() === '' ? NaN : Number(c.value)));

  function problem(b) {
    if (!b.every(Number.isFinite)) return 'fill in all four corners';
    const [x0, y0, x1, y1] = b;
    if (x0 < 0 || y0 < 0 || x1 > width || y1 > height) return `the box must lie inside the ${width} × ${height} image`;
    if (x1 <= x0 || y1 <= y0) return 'x1 must be greater than x0, and y1 greater than y0';
    return '';
  }

  function say(text, ok) {
    if (!hint) return;
    if (!text) { hint.innerHTML = hintText; hint.classList.remove('drawn'); return; }
    hint.textContent = text;
    hint.classList.toggle('drawn', !!ok);
  }

  function show(b) {
    const v = viewer();
    if (!v || !v.setLayerBoxes) return;
    v.setLayerBoxes('drawn', problem(b) ? [] : [{ x0: b[0], y0: b[1], x1: b[2], y1: b[3], label: 'new gold' }]);
  }

  document.addEventListener('mv:boxdrawn', (event) => {
    const d = event.detail || {};
    const b = [d.x0, d.y0, d.x1, d.y1].map(Number);
    if (!b.every(Number.isFinite)) return;
    corners.forEach((c, n) => { c.value = fmt(b[n]); });
    say(`Box drawn: (${fmt(b[0])}, ${fmt(b[1])}) to (${fmt(b[2])}, ${fmt(b[3])}). Save a new version to keep it.`, true);
  });

  let timer = null;
  corners.forEach((c) => c.addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      const b = read(), why = problem(b);
      show(b);
      say(why && b.some(Number.isFinite) ? `Not a box yet: ${why}.` : '', false);
    }, 150);
  }));
})();
