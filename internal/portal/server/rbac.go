package server

// The portal's own permissions, generated into config/portal/rbac by `make manifests`.
// They let it keep users, their hash Secrets and signing keys, keep (and watch, for the
// bindings reconciler) users' bindings to the three Mooring roles (bind is limited to
// those roles by name), list and watch namespaces (metadata only, so a namespace
// granted before it existed gets its bindings when it is created), elect a leader with
// a Lease (and its event), keep teams (the API writes them once the caller's own RBAC
// allowed it; the teams reconciler watches them and writes their status), update the
// subjects of a team's bindings as members come and go, and impersonate nothing but
// ServiceAccounts of the users namespace and the role groups. Everything a user does is authorized by the API server
// as that user.
//
// +kubebuilder:rbac:groups=portal.mooring.dev,resources=users,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=portal.mooring.dev,resources=users/status,verbs=get;update
// +kubebuilder:rbac:groups=portal.mooring.dev,resources=teams,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=portal.mooring.dev,resources=teams/status,verbs=get;update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;update;delete,namespace=mooring-portal
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings;clusterrolebindings,verbs=list;watch;create;update;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=mooring-admin;mooring-developer;mooring-auditor
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=mooring-portal
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch,namespace=mooring-portal
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=impersonate,namespace=mooring-portal-users
// +kubebuilder:rbac:groups="",resources=groups,verbs=impersonate,resourceNames=mooring-portal:admin;mooring-portal:developer;mooring-portal:auditor;mooring-portal:none
