"""Every write to workspace state, one function per change, each audited. One module per
entity; the names are re-exported here, so `from workspaces import services` and
`from workspaces.services import …` keep working.

A service that only pages, the API and commands call is the outermost transaction: it opens it
with `transaction.atomic(durable=True)`, so a caller that wraps it in a transaction of its own
fails at once instead of silently widening it. Those that other code calls inside its own
transaction (workspace_create, user_ensure and member_add under demo_setup's, repository_archive
and installation_unbind under a webhook's, repository_restore under repository_connect's) open
an ordinary one. Tests run inside the test case's transaction, which durable blocks accept."""

from workspaces.services.archive import (
    repository_archive,
    repository_footprint,
    repository_purge,
    repository_remove,
    repository_restore,
)
from workspaces.services.few_shots import (
    few_shot_proposal_accept,
    few_shot_proposal_decide,
    few_shot_proposal_edit,
    few_shot_proposal_reject,
    few_shot_proposals_refresh,
)
from workspaces.services.memberships import (
    INVITATION_SALT,
    invitation_accept,
    invitation_check_recipient,
    invitation_from_token,
    invitation_link_token,
    invitation_revoke,
    member_change_role,
    member_invite,
    member_remove,
)
from workspaces.services.repositories import (
    check_github_access,
    repository_connect,
    repository_update,
    resolve_local_repository,
)
from workspaces.services.reviewers import (
    reviewer_config_create,
    reviewer_config_delete,
    reviewer_config_update,
)
from workspaces.services.tenancy import (
    installation_bind,
    installation_unbind,
    local_root_grant,
    member_add,
    repository_grant,
    user_ensure,
)
from workspaces.services.tokens import (
    api_token_authenticate,
    api_token_create,
    api_token_revoke,
)
from workspaces.services.workspaces import (
    budgets_update,
    github_handle_update,
    rules_update,
    workspace_create,
)

__all__ = [
    "INVITATION_SALT",
    "api_token_authenticate",
    "api_token_create",
    "api_token_revoke",
    "budgets_update",
    "check_github_access",
    "few_shot_proposal_accept",
    "few_shot_proposal_decide",
    "few_shot_proposal_edit",
    "few_shot_proposal_reject",
    "few_shot_proposals_refresh",
    "github_handle_update",
    "installation_bind",
    "installation_unbind",
    "invitation_accept",
    "invitation_check_recipient",
    "invitation_from_token",
    "invitation_link_token",
    "invitation_revoke",
    "local_root_grant",
    "member_add",
    "member_change_role",
    "member_invite",
    "member_remove",
    "repository_archive",
    "repository_connect",
    "repository_footprint",
    "repository_grant",
    "repository_purge",
    "repository_remove",
    "repository_restore",
    "repository_update",
    "resolve_local_repository",
    "reviewer_config_create",
    "reviewer_config_delete",
    "reviewer_config_update",
    "rules_update",
    "user_ensure",
    "workspace_create",
]
