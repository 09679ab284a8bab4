"""The REST API's parts below the app (service/main.py builds it): deps.py (the request's
session, settings and access rules, declared once), guard.py (the body size limit, deadline and
memory cap, and the rules every request meets before its route), hosts.py (the Host
allow-list), lanes.py (the heavy reads' own lane), routes/ (one module per resource)."""
