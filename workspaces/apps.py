from django.apps import AppConfig


class WorkspacesConfig(AppConfig):
    name = "workspaces"
    verbose_name = "Workspaces"

    def ready(self) -> None:
        from django.contrib.auth.signals import user_logged_out

        from workspaces.live_access import close_sockets_on_logout

        user_logged_out.connect(close_sockets_on_logout, dispatch_uid="workspaces.logout_sockets")
