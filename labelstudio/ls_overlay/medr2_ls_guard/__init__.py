"""Organization checks Label Studio Community 1.23 lacks (runs inside Label Studio; docs/labelstudio.md).

Community scopes projects and tasks to the user's active organization, but some endpoints that take an
object id do not: `GET|PATCH|DELETE /api/annotations/<id>/` answers any logged-in user about any
annotation, whatever organization it belongs to, and `GET /api/tasks/?project=<id>` lists the tasks
of any project. Readers are isolated by organization (one each), so
those endpoints must check it too: after authentication, an object of another organization is a 404."""


def install() -> None:
    from projects.models import Project
    from rest_framework.exceptions import NotFound
    from tasks import api
    from tasks.models import Annotation, AnnotationDraft, Task

    # view class -> the organization of the object its URL names (by the `pk` kwarg)
    owners = {
        api.AnnotationAPI: (Annotation, "project__organization_id"),
        api.AnnotationConvertAPI: (Annotation, "project__organization_id"),
        api.AnnotationsListAPI: (Task, "project__organization_id"),
        api.AnnotationDraftAPI: (AnnotationDraft, "task__project__organization_id"),
        api.TaskAgreementAPI: (Task, "project__organization_id"),
    }
    for view, (model, path) in owners.items():
        view.initial = _guarded(view.initial, model, path, NotFound)
    # the task list (the data manager's API) takes its project from the query: ?project=<id>
    api.TaskListAPI.initial = _guarded(api.TaskListAPI.initial, Project, "organization_id", NotFound, query="project")


def _guarded(initial, model, path, not_found, query=None):
    def guarded_initial(self, request, *args, **kwargs):
        initial(self, request, *args, **kwargs)          # authentication and Label Studio's own permissions
        pk = request.query_params.get(query) if query else kwargs.get("pk")
        if pk is None or not str(pk).isdigit():
            return
        owner = model.objects.filter(pk=pk).values_list(path, flat=True).first()
        if owner is not None and owner != getattr(request.user, "active_organization_id", None):
            raise not_found()
    return guarded_initial
