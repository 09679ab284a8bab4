"""Placeholder replaced below."""
def mount(app):
    return None
