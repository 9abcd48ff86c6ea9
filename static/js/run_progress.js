/* The run page (templates/workers/run_detail.html): while the run is active, poll its progress JSON every
 * 2 s, update the bar, counts, rate and status, and reload the page once it is finished and scored. */
(function () {
  'use strict';
  const box = document.getElementById('progress');
  if (!box || box.dataset.active !== '1') return;
  const tick = async () => {
    try {
      const r = await fetch(box.dataset.url, {headers: {'Accept': 'application/json'}});
      if (!r.ok) return setTimeout(tick, 5000);
      const p = await r.json();
      document.getElementById('progress-bar').value = p.done;
      document.getElementById('progress-text').textContent = `${p.done.toLocaleString('en-GB')} / ${p.total.toLocaleString('en-GB')} prediction${p.total === 1 ? '' : 's'} (${Number(p.percent).toFixed(1)}%)`;
      document.getElementById('progress-rate').textContent = p.rate_per_s ? `${Number(p.rate_per_s).toFixed(1)} predictions/s` + (p.eta_seconds != null ? ` · about ${Math.round(p.eta_seconds)} s left` : '') : '';
      document.getElementById('run-status').textContent = p.status.charAt(0).toUpperCase() + p.status.slice(1);
      if (p.errors) document.getElementById('progress-errors').textContent = `· ${p.errors.toLocaleString('en-GB')} per-item error${p.errors === 1 ? '' : 's'}`;
      if (p.status === 'running' || p.status === 'pending' || !p.scored) setTimeout(tick, 2000);
      else window.location.reload();
    } catch (e) { setTimeout(tick, 5000); }
  };
  setTimeout(tick, 2000);
})();
