"""Live pages: websocket consumers, the events services send them, each space's live version."""
