"""Dashboard pages (Plotly), drawn from service functions, never over HTTP to itself."""
