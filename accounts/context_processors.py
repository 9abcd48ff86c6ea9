from .roles import Capability, user_can, user_roles


def roles(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"user_roles": [], "can": {}}
    return {
        "user_roles": sorted(r.value for r in user_roles(user)),
        "can": {c.value: user_can(user, c) for c in Capability},
    }
