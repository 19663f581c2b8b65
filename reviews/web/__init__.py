"""Pages: views, forms and the GitHub webhook endpoint."""
