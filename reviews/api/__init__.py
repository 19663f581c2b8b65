"""The ninja API: routers and schemas."""
