/* Review by selection (the chain page, templates/annotation/chain_detail.html): nothing is checked until
 * the curator checks it, "Check all" / "Check none" are explicit, the count of checked steps is shown,
 * and approving or rejecting with nothing checked is refused here with a message (and again on the
 * server: annotation.views.ItemReviewView). */
(function () {
  'use strict';
  document.querySelectorAll('form.review-form').forEach((form) => {
    const boxes = () => Array.from(form.querySelectorAll('input.review-check'));
    const count = form.querySelector('.selection-count');
    const refused = form.querySelector('.review-refused');

    function update() {
      const n = boxes().filter((b) => b.checked).length, total = boxes().length;
      if (count) count.textContent = n ? `${n} of ${total} step${total === 1 ? '' : 's'} checked.` :
        'Nothing checked: tick the steps to review.';
      if (refused && n) refused.hidden = true;
    }

    form.addEventListener('change', update);
    form.querySelectorAll('button[data-review]').forEach((button) => button.addEventListener('click', () => {
      boxes().forEach((b) => { b.checked = button.dataset.review === 'all'; });
      update();
    }));
    form.addEventListener('submit', (event) => {
      if (boxes().some((b) => b.checked)) return;
      event.preventDefault();
      if (refused) refused.hidden = false;
    });
    update();
  });
})();
