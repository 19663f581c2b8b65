// The findings index, filtered by priority, status and reviewer in the page: a line that does
// not match is hidden, and so is its card when the card sits in the list. The form is hidden
// without JavaScript (the groups by priority still read). Live updates replace the section:
// the choice is kept here and applied again to what arrives.
(function () {
  const chosen = { priority: "", status: "", reviewer: "" };

  function matches(line) {
    const status = line.dataset.status;
    const reviewers = (line.dataset.reviewers || "").split(" ");
    return (!chosen.priority || line.dataset.priority === chosen.priority)
      && (!chosen.status
        || (chosen.status === "active" ? status === "open" || status === "consensus_ready"
          : status === chosen.status))
      && (!chosen.reviewer || reviewers.includes(chosen.reviewer));
  }

  function apply() {
    const form = document.getElementById("finding-filter");
    if (!form) return;
    form.hidden = false;
    for (const [name, value] of Object.entries(chosen)) form.elements[name].value = value;
    let shown = 0;
    const lines = document.querySelectorAll("#review-findings li[data-finding]");
    lines.forEach((line) => {
      const show = matches(line);
      line.hidden = !show;
      if (show) shown += 1;
      const card = document.getElementById("node-" + line.dataset.finding);
      if (card) card.hidden = !show;
    });
    const count = document.getElementById("finding-filter-count");
    if (count) count.textContent = `${shown} of ${lines.length} shown`;
  }

  document.addEventListener("change", (event) => {
    const form = event.target.closest && event.target.closest("#finding-filter");
    if (!form) return;
    chosen[event.target.name] = event.target.value;
    apply();
  });
  document.addEventListener("DOMContentLoaded", apply);
  document.addEventListener("htmx:oobAfterSwap", apply);
  document.addEventListener("htmx:afterSettle", apply);
})();
