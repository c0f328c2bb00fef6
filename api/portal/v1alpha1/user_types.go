package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Role is what a portal user may do in the cluster; each role but RoleNone maps to one
// of Mooring's user ClusterRoles (mooring-admin, mooring-developer, mooring-auditor).
// +kubebuilder:validation:Enum=none;admin;developer;auditor
type Role string

// The roles a user can hold.
const (
	RoleNone      Role = "none"
	RoleAdmin     Role = "admin"
	RoleDeveloper Role = "developer"
	RoleAuditor   Role = "auditor"
)

// Roles lists every valid role, RoleNone first.
var Roles = []Role{RoleNone, RoleAdmin, RoleDeveloper, RoleAuditor}

// IDLabel carries a User's id, so the portal finds a user by id with a label selector.
const IDLabel = "portal.mooring.dev/user-id"

// UserSpec is who the user is and which role an admin granted.
type UserSpec struct {
	// ID is the user's stable identifier (a UUID); the cluster identity the portal
	// impersonates for this user is derived from it.
	// +kubebuilder:validation:Format=uuid
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="id is immutable"
	ID string `json:"id"`
	// Username is the name the user logs in with, lower-case; it is also the object's name.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Username string `json:"username"`
	// Email is where the user can be reached.
	// +kubebuilder:validation:MaxLength=254
	Email string `json:"email"`
	// Role is what the user may do; "none" until an admin grants one.
	// +kubebuilder:default=none
	Role Role `json:"role"`
	// Namespaces are where a developer works; ignored for other roles.
	// +optional
	// +listType=set
	Namespaces []string `json:"namespaces,omitempty"`
	// SSO names the account at the OpenID Connect provider it logs in through; such an
	// account has no password. Unset for a local account.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="sso is immutable"
	SSO *SSOIdentity `json:"sso,omitempty"`
}

// SSOIdentity is who an account is at its OpenID Connect provider: the ID token's
// issuer and subject, which together never change for one person (names and e-mail
// addresses may).
type SSOIdentity struct {
	// Issuer is the provider's issuer URL (the ID token's iss).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	Issuer string `json:"issuer"`
	// Subject is the ID token's sub.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Subject string `json:"subject"`
}

// UserStatus is the account's security state, shared by every portal replica.
type UserStatus struct {
	// TokenGeneration is stamped into every token issued to the user; raising it (on a
	// password change or logout-all) revokes every outstanding token at once.
	// +optional
	TokenGeneration int64 `json:"tokenGeneration,omitempty"`
	// FailedLogins counts failed logins since the last successful one, from every
	// client together; it locks nothing by itself (see ClientLockouts).
	// +optional
	FailedLogins int32 `json:"failedLogins,omitempty"`
	// LockedUntil is no longer written: locks are per client (ClientLockouts), so that
	// nobody can lock an account for its owner without knowing its password. A value
	// left by an older portal is ignored.
	// +optional
	LockedUntil *metav1.Time `json:"lockedUntil,omitempty"`
	// ClientLockouts count failed logins per client address (hashed) and lock the
	// account for that client only: a client that keeps guessing is throttled, while
	// the owner, from any client that has not failed, still logs in. An admin's unlock
	// clears them. The oldest entries give way when the list is full.
	// +optional
	// +listType=map
	// +listMapKey=client
	// +kubebuilder:validation:MaxItems=32
	ClientLockouts []ClientLockout `json:"clientLockouts,omitempty"`
	// Sessions are the user's live logins, each a family of refresh tokens of which only
	// the newest may be used. Every replica reads and writes them here, guarded by the
	// User's resourceVersion, so exactly one of two concurrent refreshes wins.
	// +optional
	// +listType=map
	// +listMapKey=id
	// +kubebuilder:validation:MaxItems=64
	Sessions []Session `json:"sessions,omitempty"`
	// Groups are the values of the groups claim of the user's last single sign-on; teams
	// that name one of them count the user as a member. Empty for a local account.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=256
	Groups []string `json:"groups,omitempty"`
}

// ClientLockout is the failed-login count and lock of one account for one client.
type ClientLockout struct {
	// Client is a hash of the client's address (the one the portal trusts for rate
	// limits), not the address itself.
	// +kubebuilder:validation:MaxLength=64
	Client string `json:"client"`
	// FailedLogins counts this client's failed logins since its last successful one.
	FailedLogins int32 `json:"failedLogins"`
	// LastFailure is when this client last failed; the oldest entry goes first.
	LastFailure metav1.Time `json:"lastFailure"`
	// LockedUntil, when in the future, rejects every login of the user from this client.
	// +optional
	LockedUntil *metav1.Time `json:"lockedUntil,omitempty"`
}

// Session is one login: a token family. Each refresh replaces Current with the id of
// the new refresh token; presenting any other refresh token of the family is reuse
// (a stolen or replayed token) and ends the session with every token it issued.
type Session struct {
	// ID names the family; every token of the login carries it.
	// +kubebuilder:validation:MaxLength=64
	ID string `json:"id"`
	// Current is the id (jti) of the one refresh token of the family still usable.
	// +kubebuilder:validation:MaxLength=64
	Current string `json:"current"`
	// ExpiresAt is when Current expires; the session is dropped after it.
	ExpiresAt metav1.Time `json:"expiresAt"`
	// StartedAt is the login. No refresh extends the session past StartedAt plus the
	// portal's --session-max-lifetime (an absolute timeout besides the idle one); a
	// session recorded before this field existed starts counting at its next refresh.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
}

// User is an account of the Mooring portal. Its password hash lives in a Secret that
// only the portal's ServiceAccount reads, never here.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="ID",type=string,JSONPath=`.spec.id`
// +kubebuilder:printcolumn:name="Role",type=string,JSONPath=`.spec.role`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type User struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   UserSpec   `json:"spec,omitempty"`
	Status UserStatus `json:"status,omitempty"`
}

// UserList is a list of Users.
//
// +kubebuilder:object:root=true
type UserList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []User `json:"items"`
}

var _ runtime.Object = &User{}
