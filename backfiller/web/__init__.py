"""The HTTP side: the Starlette app, its access gate, REST and OpenAPI, the UI routes."""
