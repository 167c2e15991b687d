"""Custom envs the tests name by import path, as a user names their own (``package.module:EnvClass``)."""
