// Render cohort diagrams; mermaid's strict mode keeps labels as text, never markup.
document.addEventListener("DOMContentLoaded", () => {
  if (window.mermaid) {
    window.mermaid.initialize({ startOnLoad: false, securityLevel: "strict" });
    window.mermaid.run({ querySelector: "pre.mermaid" });
  }
});
