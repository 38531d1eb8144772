"""HTTP routes, one module per resource. Each route parses, authorises, calls one
service function and renders; business rules live in vault/."""
