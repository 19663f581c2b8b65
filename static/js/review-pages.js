// Bounded review pages: after "Show more" appends a page of findings, keyboard focus moves to
// the first new card's page instead of being lost with the link htmx replaced.
document.addEventListener("htmx:afterSettle", () => {
  const page = document.querySelector("[data-focus-on-load]");
  if (page) {
    page.removeAttribute("data-focus-on-load");
    page.focus();
  }
});
