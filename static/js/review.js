// Render cohort diagrams; mermaid's strict mode keeps labels as text, never markup.
// Live updates replace the cohorts section (htmx out-of-band swaps over the socket), so
// diagrams are rendered again whenever unrendered ones arrive, once per batch of swaps.
let diagramsPending = false;

function renderDiagrams() {
  diagramsPending = false;
  if (window.mermaid) {
    window.mermaid.run({ querySelector: "pre.mermaid:not([data-processed])" });
  }
}

function scheduleDiagrams() {
  if (!diagramsPending) {
    diagramsPending = true;
    setTimeout(renderDiagrams, 0);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  if (window.mermaid) {
    window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });
    renderDiagrams();
  }
});
document.addEventListener("htmx:oobAfterSwap", scheduleDiagrams);
document.addEventListener("htmx:afterSwap", scheduleDiagrams);
