// Cohort diagrams, drawn by Mermaid (strict mode keeps labels as text, never markup).
// The 3.5 MB script is loaded only when a person first opens a diagram: every diagram starts
// in a closed <details>. Live updates swap whole sections (htmx out-of-band over the socket);
// a drawn diagram whose source did not change is carried into the incoming section, and a new
// or changed one is drawn once its <details> is open.
(() => {
  const self = document.currentScript;
  const MERMAID_SRC = self ? self.dataset.mermaidSrc : "";
  const NONCE = self ? self.nonce : "";
  const sources = new WeakMap(); // a drawn <pre> → the source it was drawn from
  const drawing = new WeakSet();
  let loading = null;

  function loadMermaid() {
    if (window.mermaid) return Promise.resolve(window.mermaid);
    if (!loading) {
      loading = new Promise((resolve, reject) => {
        const script = document.createElement("script");
        script.src = MERMAID_SRC;
        script.nonce = NONCE; // the CSP runs only scripts carrying the page's nonce
        script.onload = () => {
          window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });
          resolve(window.mermaid);
        };
        script.onerror = () => {
          loading = null;
          reject(new Error("could not load " + MERMAID_SRC));
        };
        document.head.appendChild(script);
      });
    }
    return loading;
  }

  function shown(node) {
    for (let d = node.closest("details"); d; d = d.parentElement.closest("details")) {
      if (!d.open) return false;
    }
    return true;
  }

  function undrawn(root) {
    return [...root.querySelectorAll("pre.mermaid:not([data-processed])")].filter(
      (pre) => shown(pre) && !drawing.has(pre),
    );
  }

  async function draw(root) {
    const nodes = undrawn(root);
    if (!nodes.length) return;
    nodes.forEach((pre) => drawing.add(pre));
    try {
      const mermaid = await loadMermaid();
      const ready = nodes.filter((pre) => pre.isConnected && !pre.hasAttribute("data-processed"));
      ready.forEach((pre) => sources.set(pre, pre.textContent));
      if (ready.length) await mermaid.run({ nodes: ready });
    } catch (error) {
      console.error(error);
    } finally {
      nodes.forEach((pre) => drawing.delete(pre));
    }
  }

  // Before a section is replaced: keep each drawn diagram whose source comes back unchanged.
  document.addEventListener("htmx:oobBeforeSwap", (event) => {
    const { target, fragment } = event.detail;
    if (!target || !fragment) return;
    const drawn = new Map();
    target.querySelectorAll("pre.mermaid[data-processed]").forEach((pre) => {
      const source = sources.get(pre);
      if (source !== undefined && !drawn.has(source)) drawn.set(source, pre);
    });
    if (!drawn.size) return;
    fragment.querySelectorAll("pre.mermaid").forEach((pre) => {
      const kept = drawn.get(pre.textContent);
      if (kept) {
        drawn.delete(pre.textContent);
        pre.replaceWith(kept);
      }
    });
  });

  document.addEventListener(
    "toggle",
    (event) => {
      const details = event.target;
      if (details instanceof HTMLDetailsElement && details.open) draw(details);
    },
    true,
  );
  const drawAll = () => draw(document);
  document.addEventListener("htmx:wsAfterMessage", drawAll);
  document.addEventListener("htmx:afterSwap", drawAll);
  document.addEventListener("DOMContentLoaded", drawAll);
})();
