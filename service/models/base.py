"""The declarative base. The schema changes only through Alembic (migrations/)."""
from __future__ import annotations

from sqlalchemy.orm import DeclarativeBase

NAME = 200


class Base(DeclarativeBase):
    pass
