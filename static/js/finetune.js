/* A fine-tuning job's page (templates/finetune/job_detail.html): draw the loss curve (train loss at every
 * step, val loss at every evaluation) from the progress the page embeds (json_script #ft-progress-data),
 * and while the job is pending or running (#ft-progress[data-active="1"]) poll its progress JSON
 * (data-url) every 2 s: the bar, the step line, the live numbers and the curve follow; polling stops when
 * the job has finished, and the page reloads once to show the result. */
(() => {
  'use strict';

  const SVG = 'http://www.w3.org/2000/svg';
  const POLL_MS = 2000;
  const RETRY_MS = 5000;
  const BOX = { left: 56, right: 14, top: 22, bottom: 32 };

  function bytes(n) {
    if (!n) return '—';
    const units = ['bytes', 'KB', 'MB', 'GB', 'TB'];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i += 1; }
    return `${i ? n.toFixed(1) : n} ${units[i]}`;
  }

  function duration(s) {
    if (s === null || s === undefined) return '—';
    s = Math.max(Math.round(s), 0);
    const h = Math.floor(s / 3600);
    const m = Math.floor((s % 3600) / 60);
    const sec = s % 60;
    if (h) return `${h} h ${String(m).padStart(2, '0')} min`;
    return m ? `${m} min ${String(sec).padStart(2, '0')} s` : `${sec} s`;
  }

  function loss(v) {
    return v === null || v === undefined ? '—' : Number(v).toFixed(4);
  }

  function node(parent, tag, attrs, text) {
    const el = document.createElementNS(SVG, tag);
    Object.entries(attrs || {}).forEach(([k, v]) => el.setAttribute(k, v));
    if (text !== undefined) el.textContent = text;
    parent.appendChild(el);
    return el;
  }

  function ticks(lo, hi, n) {
    return Array.from({ length: n + 1 }, (_, i) => lo + ((hi - lo) * i) / n);
  }

  /* The curve: x = step (0 .. the budget), y = loss (the range of every train and val value, padded). */
  function draw(svg, history, steps) {
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const [, , width, height] = svg.getAttribute('viewBox').split(' ').map(Number);
    const w = width - BOX.left - BOX.right;
    const h = height - BOX.top - BOX.bottom;
    const values = history.flatMap((p) => [p.loss, p.val_loss]).filter((v) => typeof v === 'number');
    const lastStep = history.length ? history[history.length - 1].step : 0;
    const xMax = Math.max(steps || 0, lastStep, 1);
    let lo = values.length ? Math.min(...values) : 0;
    let hi = values.length ? Math.max(...values) : 1;
    if (hi - lo < 1e-9) { lo -= 0.5; hi += 0.5; }
    const pad = (hi - lo) * 0.06;
    lo = Math.max(lo - pad, 0);
    hi += pad;
    const x = (step) => BOX.left + (w * step) / xMax;
    const y = (v) => BOX.top + h - (h * (v - lo)) / (hi - lo);

    ticks(lo, hi, 4).forEach((v) => {
      node(svg, 'line', { class: 'grid', x1: BOX.left, x2: BOX.left + w, y1: y(v), y2: y(v) });
      node(svg, 'text', { x: BOX.left - 6, y: y(v) + 4, 'text-anchor': 'end' }, v.toFixed(v < 10 ? 2 : 1));
    });
    ticks(0, xMax, 4).forEach((s) => {
      node(svg, 'text', { x: x(s), y: BOX.top + h + 16, 'text-anchor': 'middle' }, String(Math.round(s)));
    });
    node(svg, 'line', { class: 'axis', x1: BOX.left, x2: BOX.left + w, y1: BOX.top + h, y2: BOX.top + h });
    node(svg, 'line', { class: 'axis', x1: BOX.left, x2: BOX.left, y1: BOX.top, y2: BOX.top + h });
    node(svg, 'text', { x: BOX.left + w, y: height - 2, 'text-anchor': 'end' }, 'step');
    node(svg, 'text', { x: BOX.left - 6, y: 11, 'text-anchor': 'end' }, 'loss');
    if (!history.length) {
      node(svg, 'text', { x: BOX.left + w / 2, y: BOX.top + h / 2, 'text-anchor': 'middle', id: 'ft-curve-empty' },
        'no step yet: the curve starts with the first step');
      return;
    }
    const train = history.filter((p) => typeof p.loss === 'number');
    node(svg, 'polyline', {
      id: 'ft-train', class: 'train',
      points: train.map((p) => `${x(p.step).toFixed(1)},${y(p.loss).toFixed(1)}`).join(' '),
    });
    const val = history.filter((p) => typeof p.val_loss === 'number');
    if (val.length > 1) {
      node(svg, 'polyline', {
        class: 'val-line', points: val.map((p) => `${x(p.step).toFixed(1)},${y(p.val_loss).toFixed(1)}`).join(' '),
      });
    }
    val.forEach((p) => {
      const dot = node(svg, 'circle', { class: 'val', cx: x(p.step), cy: y(p.val_loss), r: 4 });
      node(dot, 'title', {}, `step ${p.step}: val loss ${loss(p.val_loss)}`);
    });
    if (val.length) {   /* the best val loss so far: the weights the job keeps */
      const best = val.reduce((a, b) => (b.val_loss < a.val_loss ? b : a));
      const ring = node(svg, 'circle', { id: 'ft-best', class: 'best', cx: x(best.step), cy: y(best.val_loss), r: 8 });
      node(ring, 'title', {}, `best val loss ${loss(best.val_loss)} at step ${best.step}`);
    }
  }

  function show(box, data) {
    const p = data.progress || {};
    const steps = p.steps || 0;
    const step = p.step || 0;
    const bar = document.getElementById('ft-bar');
    if (bar) { bar.max = steps || 1; bar.value = Math.min(step, steps || step); }
    const line = document.getElementById('ft-step-text');
    if (line) line.textContent = `step ${step.toLocaleString()} / ${steps.toLocaleString()} (${data.percent}%)`;
    const status = document.getElementById('ft-status');
    if (status && data.status) {
      status.textContent = data.status.charAt(0).toUpperCase() + data.status.slice(1);
      status.className = `status ${data.status}`;
    }
    const stats = {
      loss: loss(p.loss),
      val_loss: loss(p.val_loss),
      tokens: typeof p.tokens === 'number' ? p.tokens.toLocaleString() : '—',
      rate: p.tokens_per_s ? `${Math.round(p.tokens_per_s).toLocaleString()} tokens/s` : '—',
      eta: duration(p.eta_s),
      memory: bytes(p.peak_rss_bytes),
    };
    box.querySelectorAll('[data-stat]').forEach((el) => {
      if (el.dataset.stat in stats) el.textContent = stats[el.dataset.stat];
    });
    const svg = document.getElementById('ft-curve');
    if (svg) draw(svg, p.history || [], steps);
  }

  function watch(box) {
    const first = document.getElementById('ft-progress-data');
    if (first) show(box, JSON.parse(first.textContent));
    if (box.dataset.active !== '1') return;
    const tick = async () => {
      try {
        const response = await fetch(box.dataset.url,
          { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
        if (!response.ok) { setTimeout(tick, RETRY_MS); return; }
        const data = await response.json();
        show(box, data);
        box.dataset.polls = String(Number(box.dataset.polls || 0) + 1);
        if (data.active) setTimeout(tick, POLL_MS);
        else window.location.reload();   /* finished: the page shows the result, the model and the run */
      } catch (e) {
        setTimeout(tick, RETRY_MS);      /* a missed poll (server restarting): try again */
      }
    };
    setTimeout(tick, POLL_MS);
  }

  function init() {
    const box = document.getElementById('ft-progress');
    if (box) watch(box);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
