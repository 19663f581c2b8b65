"""Git and GitHub sources for review spaces (DESIGN.md §1): diffs, worktrees, the GitHub client,
publishing plans and webhook helpers. Nothing here imports Django; configuration is passed in."""
