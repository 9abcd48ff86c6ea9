/* Pages with a job running on a worker (a release build, a report version): poll the job's progress JSON
 * every 2 s and update the line; reload the page once the job has left its running status (the page then
 * shows the result or the error). Markup: an element with data-progress-url (the JSON: status, step, done,
 * total, error) and data-running (the status while it runs), holding a <progress> and an element with
 * data-progress-text. Does nothing when there is no such element. */
(() => {
  'use strict';

  function watch(box) {
    const bar = box.querySelector('progress');
    const text = box.querySelector('[data-progress-text]');
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
        const response = await fetch(box.dataset.progressUrl,
          { headers: { Accept: 'application/json' }, credentials: 'same-origin' });
        if (response.ok) {
          const p = await response.json();
          show(p);
          if (p.status !== box.dataset.running) {
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

  function init() {
    document.querySelectorAll('[data-progress-url]').forEach(watch);
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', init);
  else init();
})();
