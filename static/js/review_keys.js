// Keyboard navigation of the guided review: j/k move between findings, n/p between the files
// of the cohort previews, ? opens the list of keys. The element reached is opened (if inside a
// closed <details>), scrolled to, focused and announced through the polite live region.
(() => {
  "use strict";

  const state = { finding: -1, file: -1 };

  function announce(text) {
    const region = document.getElementById("keys-announcer");
    if (!region) return;
    // Emptied first so the same words said twice are announced twice.
    region.textContent = "";
    setTimeout(() => { region.textContent = text; }, 50);
  }

  // One entry per finding: its copy inline in the diff when there is one, else its list card
  // (a finding whose line no preview shows, or about the whole change).
  function findings() {
    return Array.from(document.querySelectorAll("article.node")).filter((card) =>
      card.classList.contains("in-diff") || !document.getElementById("diff-" + card.id));
  }

  function files() {
    return Array.from(document.querySelectorAll("details.diff-file"));
  }

  function reveal(element) {
    for (let d = element.closest("details"); d; d = d.parentElement.closest("details")) {
      d.open = true;
    }
    if (element.tagName === "DETAILS") element.open = true;
    element.scrollIntoView({ block: "center" });
    element.focus({ preventScroll: true });
  }

  function text(element, selector) {
    const found = element.querySelector(selector);
    return found ? found.textContent.trim() : "";
  }

  function current(list, index, selector) {
    // Start from where focus is, when it is on or inside one of the list's elements.
    const here = document.activeElement && document.activeElement.closest(selector);
    const at = here ? list.indexOf(here) : -1;
    return at >= 0 ? at : index;
  }

  function moveFinding(step) {
    const list = findings();
    if (!list.length) { announce("This review has no findings."); return; }
    let at = current(list, state.finding, "article.node") + step;
    at = Math.max(0, Math.min(list.length - 1, at));
    state.finding = at;
    const card = list[at];
    reveal(card);
    const file = card.closest("details.diff-file");
    if (file) state.file = files().indexOf(file);
    announce(`Finding ${at + 1} of ${list.length}: ${text(card, ".prio")} ${text(card, "h4")} at ${card.dataset.location || "whole change"}`);
  }

  function moveFile(step) {
    const list = files();
    if (!list.length) { announce("No file previews on this page."); return; }
    let at = current(list, state.file, "details.diff-file") + step;
    at = Math.max(0, Math.min(list.length - 1, at));
    state.file = at;
    reveal(list[at]);
    announce(`File ${at + 1} of ${list.length}: ${list[at].dataset.path}`);
  }

  function openHelp() {
    const dialog = document.getElementById("keys-help");
    if (dialog && !dialog.open) {
      dialog.showModal();
      const close = document.getElementById("keys-help-close");
      if (close) close.focus();
    }
  }

  // Inputs that take no typed text (a viewed checkbox, a button) leave the keys working.
  const NOT_TYPED = ["checkbox", "radio", "button", "submit", "reset", "image", "file"];

  function typing(target) {
    if (!(target instanceof Element)) return false;
    if (target.tagName === "INPUT") return !NOT_TYPED.includes(target.type);
    return target.isContentEditable
      || ["TEXTAREA", "SELECT"].includes(target.tagName)
      || target.closest("[contenteditable]:not([contenteditable=false])") !== null;
  }

  const KEYS = {
    j: () => moveFinding(1),
    k: () => moveFinding(-1),
    n: () => moveFile(1),
    p: () => moveFile(-1),
    "?": openHelp,
  };

  document.addEventListener("keydown", (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (typing(event.target)) return;
    const dialog = document.getElementById("keys-help");
    if (dialog && dialog.open) return; // the dialog has the keyboard; Esc closes it natively
    const action = KEYS[event.key];
    if (!action) return;
    event.preventDefault();
    action();
  });

  // Swaps replace elements (a card after an action, a section from the live socket): keyboard
  // focus inside a replaced element moves to its replacement (same id) instead of the page.
  let refocus = null;
  let ownAction = false;
  function beforeSwap(event) {
    const target = event.detail.target;
    const active = document.activeElement;
    if (!target || !active || active === document.body || !target.contains(active)) return;
    const anchor = active.id ? active : active.closest("article.node, details.diff-file, [id]");
    if (anchor && anchor.id) refocus = anchor.id;
    ownAction = event.type === "htmx:beforeSwap" && target.matches("article.node");
  }
  function afterSwap() {
    if (!refocus) return;
    const id = refocus;
    const announceState = ownAction;
    refocus = null;
    ownAction = false;
    setTimeout(() => {
      const active = document.activeElement;
      if (active && active !== document.body && document.contains(active)) return;
      const element = document.getElementById(id);
      if (!element) return;
      element.focus({ preventScroll: true });
      if (announceState && element.matches("article.node")) {
        announce(`${text(element, "h4")}: ${text(element, "header .badge[class*=status-]")}`);
      }
    }, 0);
  }
  document.addEventListener("htmx:beforeSwap", beforeSwap);
  document.addEventListener("htmx:oobBeforeSwap", beforeSwap);
  document.addEventListener("htmx:afterSettle", afterSwap);
  document.addEventListener("htmx:oobAfterSwap", afterSwap);

  // A link from the file tree opens the preview it points to; a link from "To fix before
  // merge" or the findings index opens the folds around the finding's one card.
  function openTarget() {
    const id = decodeURIComponent(location.hash.slice(1));
    const target = id && document.getElementById(id);
    if (target && target.matches("details.diff-file, article.node")) reveal(target);
  }
  window.addEventListener("hashchange", openTarget);

  document.addEventListener("DOMContentLoaded", () => {
    const button = document.getElementById("keys-help-open");
    if (button) button.addEventListener("click", openHelp);
    openTarget();
  });
})();
