// Live updates replace whole sections of the review page (htmx out-of-band swaps over the
// socket). What the person did on the page must survive a swap: the <details> they opened or
// closed, what they typed and where the cursor was, and where they were reading.
(() => {
  const chosen = new Map(); // details key → open, for the details a person toggled
  const clicked = new WeakSet();
  let fields = []; // typed values waiting for their field to come back
  let anchor = null; // {id, top}: the element the reader was looking at

  // A <details> is known by its id, or by its place among the details of its nearest
  // ancestor with an id (the same in the old section and in the incoming one).
  function detailsKey(details) {
    if (details.id) return details.id;
    const host = details.parentElement && details.parentElement.closest("[id]");
    if (!host) return null;
    const peers = [...host.querySelectorAll("details")].filter(
      (d) => !d.id && d.parentElement.closest("[id]") === host,
    );
    return `${host.id}/${peers.indexOf(details)}`;
  }

  document.addEventListener(
    "click",
    (event) => {
      const summary = event.target instanceof Element && event.target.closest("summary");
      if (summary && summary.parentElement instanceof HTMLDetailsElement) {
        clicked.add(summary.parentElement);
      }
    },
    true,
  );
  document.addEventListener(
    "toggle",
    (event) => {
      const details = event.target;
      if (!(details instanceof HTMLDetailsElement) || !clicked.has(details)) return;
      clicked.delete(details);
      const key = detailsKey(details);
      if (key) chosen.set(key, details.open);
    },
    true,
  );

  function dirty(field) {
    if (field === document.activeElement) return true;
    if (field instanceof HTMLSelectElement) {
      return [...field.options].some((o) => o.selected !== o.defaultSelected);
    }
    if (field.type === "checkbox" || field.type === "radio") {
      return field.checked !== field.defaultChecked;
    }
    return field.value !== field.defaultValue;
  }

  const SKIPPED = new Set(["hidden", "submit", "button", "reset", "image", "file"]);

  document.addEventListener("htmx:oobBeforeSwap", (event) => {
    const { target, fragment } = event.detail;
    if (!target || !fragment) return;
    fragment.querySelectorAll("details").forEach((details) => {
      const key = detailsKey(details);
      if (key && chosen.has(key)) details.open = chosen.get(key);
    });
    target.querySelectorAll("input, textarea, select").forEach((field) => {
      if (!field.id || SKIPPED.has(field.type) || !dirty(field)) return;
      const focused = field === document.activeElement;
      let start = null;
      let end = null;
      try {
        start = field.selectionStart;
        end = field.selectionEnd;
      } catch (_) {
        // not a text field
      }
      fields.push({ id: field.id, value: field.value, checked: field.checked, focused, start, end });
    });
  });

  // `last`: the message is fully swapped; a field that did not come back is gone for good.
  function restoreFields(last) {
    const waiting = [];
    for (const saved of fields) {
      const field = document.getElementById(saved.id);
      if (!field || !("value" in field)) {
        waiting.push(saved);
        continue;
      }
      if (field.type === "checkbox" || field.type === "radio") field.checked = saved.checked;
      else field.value = saved.value;
      if (saved.focused && document.activeElement !== field) {
        field.focus({ preventScroll: true });
        if (saved.start !== null) {
          try {
            field.setSelectionRange(saved.start, saved.end);
          } catch (_) {
            // not a text field
          }
        }
      }
    }
    fields = last === true ? [] : waiting;
  }

  // The reader's place: the first element with an id at or below the top of the window.
  function readingAnchor(root) {
    if (window.scrollY <= 0) return null;
    let best = null;
    for (const el of root.querySelectorAll("[id]")) {
      const rect = el.getBoundingClientRect();
      if (rect.height === 0 && rect.width === 0) continue;
      if (rect.top >= 0 && (!best || rect.top < best.top)) best = { id: el.id, top: rect.top };
    }
    return best;
  }

  // A message edit sent closes its form (the answer swaps the thread in with it closed): forget
  // that the person opened it, or the next live update would open it again. Sent, not
  // answered: by the answer the form is out of the page and its events no longer reach here.
  document.addEventListener("htmx:beforeRequest", (event) => {
    const form = event.detail.elt;
    const details = form instanceof Element && form.closest("details.thread-edit");
    if (details) chosen.delete(detailsKey(details));
  });

  document.addEventListener("htmx:wsBeforeMessage", (event) => {
    anchor = readingAnchor(event.target);
  });
  document.addEventListener("htmx:oobAfterSwap", () => restoreFields(false));
  document.addEventListener("htmx:afterSettle", () => restoreFields(true));
  document.addEventListener("htmx:wsAfterMessage", () => {
    restoreFields(true);
    if (!anchor) return;
    const el = document.getElementById(anchor.id);
    if (el) {
      const moved = el.getBoundingClientRect().top - anchor.top;
      if (Math.abs(moved) >= 1) window.scrollBy(0, moved);
    }
    anchor = null;
  });
})();
