/* The run form's live count (templates/workers/run_new.html, docs/evaluation.md "Starting a run").
 *
 * As the choices change, asks GET /api/runs/preview/ what they select, with the run's own item
 * selection, and shows "1,234 items · 12,340 variants · 3 models → 37,020 predictions" and why the run
 * would be refused (no model chosen, nothing matches, a baseline on its training split). Only the
 * latest answer is shown; an error answer shows its sentence. */
(function () {
  'use strict';
  const form = document.getElementById('run-form');
  const box = document.getElementById('run-preview');
  if (!form || !box || !window.fetch) return;
  const summary = box.querySelector('.run-preview-summary');
  const detail = box.querySelector('.run-preview-detail');
  const IGNORED = new Set(['csrfmiddlewaretoken', 'name', 'batch_size']);   // they change no count
  let timer = null, controller = null, asked = 0;

  function query() {
    const params = new URLSearchParams();
    for (const [key, value] of new FormData(form)) {
      if (!IGNORED.has(key) && value !== '') params.append(key, value === 'on' ? 'true' : value);
    }
    return params.toString();
  }

  function show(text, more, state) {
    summary.textContent = text;
    detail.textContent = more;
    box.classList.toggle('error', state === 'error');
    box.classList.toggle('pending', state === 'pending');
  }

  async function refresh() {
    const n = ++asked;
    if (controller) controller.abort();
    controller = new AbortController();
    box.classList.add('pending');
    try {
      const response = await fetch(`${box.dataset.url}?${query()}`, {
        headers: { Accept: 'application/json' }, credentials: 'same-origin', signal: controller.signal });
      const body = await response.json().catch(() => ({}));
      if (n !== asked) return;                                   // a newer question is on its way
      if (!response.ok) {
        show('These choices cannot be counted', body.detail || `the server answered ${response.status}`, 'error');
        return;
      }
      const problems = body.problems || [];
      show(body.summary, problems.length ? `Not startable yet: ${problems.join('; ')}.` :
        `On the ${body.split} split. Ready to start.`, problems.length ? 'error' : '');
    } catch (err) {
      if (err.name !== 'AbortError' && n === asked) show('The count is not available right now', String(err), 'error');
    }
  }

  function later() {
    clearTimeout(timer);
    timer = setTimeout(refresh, 250);
  }

  form.addEventListener('change', later);
  form.addEventListener('input', (event) => { if (!IGNORED.has(event.target.name)) later(); });
  refresh();
})();
