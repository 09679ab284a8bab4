"""Dashboard pages (Plotly), drawn from service functions, never over HTTP to itself:
routes.py (the pages, their data from the use cases), home.py (the home page's view
model: each benchmark's verdict and the decisions it links), auth.py (/login and /logout:
a token exchanged for the read cookie), values.py (stored values as pages show them,
read defensively), figures.py (data to Plotly figures, pure);
templates/ holds the pages' Jinja templates, static/ the stylesheet and icon."""
