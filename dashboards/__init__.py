"""Dashboard pages (Plotly), drawn from service functions, never over HTTP to itself:
routes.py (the pages, their data from the use cases), figures.py (data to Plotly figures, pure);
templates/ holds the pages' Jinja templates, static/ the stylesheet and icon."""
