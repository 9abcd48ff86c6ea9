"""Release pages (docs/releases.md). Thin: parse, call one service or selector, render. Admins create,
build and publish; curators and auditors read."""
from __future__ import annotations

from pathlib import Path

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import FileResponse, Http404, JsonResponse
from django.shortcuts import redirect, render
from django.views import View

from accounts.permissions import CapabilityRequiredMixin
from accounts.roles import Capability, user_can
from common.errors import Conflict
from common.pagination import page_of

from . import selectors
from .forms import ReleaseForm
from .models import Release
from .package.build import archive_path
from .services import release_build_later, release_create, release_publish, release_root

CHANGES_PER_PAGE = 50
CHANGE_KINDS = selectors.CHANGE_KINDS


def built_archive(release: Release) -> Path | None:
    """The built archive (`<release root>/<folder>.tar.gz`), or None when there is none to serve."""
    if release.status not in (Release.Status.BUILT, Release.Status.PUBLISHED) or not release.folder:
        return None
    root = release_root().resolve()
    path = archive_path(root / release.folder).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        return None
    return path


class ReleaseListView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_RELEASES

    def get(self, request):
        return render(request, "releases/release_list.html", {
            "page": page_of(request, selectors.release_summaries(), 25),
            "can_manage": user_can(request.user, Capability.MANAGE_RELEASES)})


class ReleaseCreateView(CapabilityRequiredMixin, View):
    required_capability = Capability.MANAGE_RELEASES

    def _render(self, request, form, status=200):
        return render(request, "releases/release_new.html", {"form": form}, status=status)

    def _form(self, request, data=None):
        return ReleaseForm(data, choices=selectors.release_filter_choices())

    def get(self, request):
        return self._render(request, self._form(request))

    def post(self, request):
        form = self._form(request, request.POST)
        if form.is_valid():
            data = form.cleaned_data
            try:
                release = release_create(actor=request.user, version=data["version"].strip(), title=data["title"],
                                         description=data["description"], license=data["license"],
                                         filters=form.filters(), include=tuple(data["include"]))
            except ValidationError as exc:
                form.add_error(None, exc)
            else:
                messages.success(request, f"Release {release.version} created as a draft "
                                          f"({release.counts.get('items', 0)} items); build it to write the files.")
                return redirect("releases:release-detail", pk=release.pk)
        return self._render(request, form, status=400)


class ReleaseDetailView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_RELEASES

    def get(self, request, pk: int):
        release = selectors.release_get(pk=pk)
        kind = request.GET.get("kind", "")
        kind = kind if kind in CHANGE_KINDS else ""
        summary = selectors.release_change_summary(release=release)
        changes = page_of(request, selectors.release_change_rows(release=release, summary=summary, kind=kind),
                          CHANGES_PER_PAGE, param="changes")
        return render(request, "releases/release_detail.html", {
            "release": release, "count_tables": selectors.release_count_tables(release=release),
            "change_summary": summary, "changes": changes,
            "kind": kind, "kinds": CHANGE_KINDS, "progress": selectors.release_progress(pk=release.pk),
            "has_archive": built_archive(release) is not None,
            "can_manage": user_can(request.user, Capability.MANAGE_RELEASES)})


class ReleaseProgressView(CapabilityRequiredMixin, View):
    """JSON polled by the release page every two seconds while a build runs."""

    required_capability = Capability.VIEW_RELEASES

    def get(self, request, pk: int):
        return JsonResponse(selectors.release_progress(pk=pk))


class ReleaseBuildView(CapabilityRequiredMixin, View):
    required_capability = Capability.MANAGE_RELEASES

    def post(self, request, pk: int):
        release = selectors.release_get(pk=pk)
        try:
            release_build_later(release=release, actor=request.user)
        except ValidationError as exc:
            messages.error(request, "; ".join(exc.messages))
        except Conflict as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, f"Build of {release.version} queued; its progress shows below.")
        return redirect("releases:release-detail", pk=pk)


class ReleasePublishView(CapabilityRequiredMixin, View):
    required_capability = Capability.MANAGE_RELEASES

    def post(self, request, pk: int):
        release = selectors.release_get(pk=pk)
        try:
            release = release_publish(release=release, actor=request.user)
        except ValidationError as exc:
            messages.error(request, "; ".join(exc.messages))
        except Conflict as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, f"Release {release.version} published: it can never change now.")
        return redirect("releases:release-detail", pk=pk)


class ReleaseDownloadView(CapabilityRequiredMixin, View):
    required_capability = Capability.VIEW_RELEASES

    def get(self, request, pk: int):
        release = selectors.release_get(pk=pk)
        path = built_archive(release)
        if path is None:
            raise Http404("this release has no archive: build it first")
        return FileResponse(path.open("rb"), as_attachment=True, content_type="application/gzip",
                            filename=f"{release.name}-{release.version}.tar.gz")
