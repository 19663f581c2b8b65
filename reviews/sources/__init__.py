"""Git and GitHub sources for review spaces: diffs, worktrees, the GitHub client,
publishing plans and webhook helpers. Nothing here imports Django; configuration is passed in."""
