/* Release page: while a build runs, poll the progress JSON every 2 s and update the line; reload the
 * page once the build has finished or failed (it then shows the digest, the download or the error).
 * Reads its URL from #release-progress[data-url]; does nothing when the element is missing. */
(() => {
  'use strict';

  function init() {
    const box = document.getElementById('release-progress');
    if (!box || !box.dataset.url) return;
    const bar = document.getElementById('release-progress-bar');
    const text = document.getElementById('release-progress-text');
    let timer = null;

    function show(p) {
      box.dataset.status = p.status;
      if (bar) {
        bar.max = p.total > 0 ? p.total : 1;
        bar.value = p.total > 0 ? p.done : 0;
      }
      if (text) {
        const pct = p.total > 0 ? ` (${Math.floor((100 * p.done) / p.total)}%)` : '';
        const count = p.total > 0 ? `: ${p.done.toLocaleString()} / ${p.total.toLocaleString()}${pct}` : '';
        text.textContent = `${p.step || 'queued'}${count}${p.error ? ' · ' + p.error : ''}`;
      }
    }

    async function poll() {
      try {
        const response = await fetch(box.dataset.url, { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
        if (response.ok) {
          const p = await response.json();
          show(p);
          if (p.status !== 'building') {
            clearInterval(timer);
            window.location.reload();
          }
        }
      } catch (e) {
        /* a missed poll (server restarting): try again on the next tick */
      }
    }

    timer = setInterval(poll, 2000);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
