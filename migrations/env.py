"""Alembic environment: the URL comes from the caller's config or from perfwarden's settings."""
from alembic import context
from sqlalchemy import create_engine, pool

# each concept's tables join Base.metadata when their module is imported
import service.alerts.tables  # noqa: F401
import service.baselines.tables  # noqa: F401
import service.curations.tables  # noqa: F401
import service.experiments.tables  # noqa: F401
import service.github.tables  # noqa: F401
import service.history.tables  # noqa: F401
import service.jobs.tables  # noqa: F401
import service.runs.tables  # noqa: F401
import service.traces.tables  # noqa: F401
from service.config import Settings
from service.models import Base

config = context.config
url = config.get_main_option("sqlalchemy.url") or Settings().database_url


def run_offline() -> None:
    context.configure(url=url, target_metadata=Base.metadata, literal_binds=True,
                      render_as_batch=url.startswith("sqlite"))
    with context.begin_transaction():
        context.run_migrations()


def run_online() -> None:
    connectable = config.attributes.get("connection")
    if connectable is None:
        engine = create_engine(url, poolclass=pool.NullPool)
        with engine.connect() as connection:
            _configure(connection)
        engine.dispose()
    else:
        _configure(connectable)


def _configure(connection) -> None:  # noqa: ANN001
    context.configure(connection=connection, target_metadata=Base.metadata,
                      render_as_batch=connection.dialect.name == "sqlite")
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_offline()
else:
    run_online()
