"""The REST API's parts below the app (service/main.py builds it): deps.py (the request's
session, settings and access rules, declared once), guard.py (the body size limit and the rules
every request meets before its route), routes/ (one module per resource)."""
