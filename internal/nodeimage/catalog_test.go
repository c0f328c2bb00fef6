package nodeimage

import (
	"io/fs"
	"slices"
	"strings"
	"testing"
)

func refs(specs []Spec) []string {
	out := make([]string, len(specs))
	for i, s := range specs {
		out[i] = s.Ref
	}
	return out
}

func TestCatalogIsHonest(t *testing.T) {
	keys := map[string]string{}
	for _, s := range Catalog() {
		t.Run(s.Ref, func(t *testing.T) {
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			if other, dup := keys[s.Key(DefaultMirror)]; dup {
				t.Errorf("same cache key as %s", other)
			}
			keys[s.Key(DefaultMirror)] = s.Ref
			if !s.StandIn() {
				if !strings.HasPrefix(s.Ref, "mooring.local/") {
					t.Errorf("an image of Mooring's own is named %s, want a mooring.local/ name", s.Ref)
				}
				return
			}
			// A stand-in says in so many words what it is: Debian's which suite, which
			// version of what, in place of which image.
			for _, want := range []string{"Debian " + s.Debian.Suite, s.Tag(), "standing in for"} {
				if !strings.Contains(s.Description, want) {
					t.Errorf("description %q does not say %q", s.Description, want)
				}
			}
			if strings.HasPrefix(s.Ref, "mooring.local/") {
				t.Errorf("a stand-in is named %s, want the name of the image it stands in for", s.Ref)
			}
		})
	}
}

func TestStartupLeavesOutTheBigImages(t *testing.T) {
	startup := refs(Startup())
	want := []string{PauseRef, "docker.io/library/busybox:1.37", "docker.io/library/memcached:1.6", "docker.io/nginxinc/nginx-unprivileged:1.26"}
	if !slices.Equal(startup, want) {
		t.Errorf("startup images %v, want %v", startup, want)
	}
	for _, ref := range []string{"docker.io/library/postgres:18", "docker.io/library/mariadb:11.8"} {
		s, ok := Find(ref)
		if !ok || !s.OnDemand {
			t.Errorf("%s: found %v, on demand %v; want it in the catalogue, built on demand", ref, ok, s.OnDemand)
		}
	}
	if _, ok := Find("docker.io/library/mysql:8.4"); ok {
		t.Error("the catalogue has a mysql image, which Debian does not ship")
	}
}

func TestKey(t *testing.T) {
	busybox, _ := Find("docker.io/library/busybox:1.37")
	if again, _ := Find(busybox.Ref); again.Key(DefaultMirror) != busybox.Key(DefaultMirror) {
		t.Fatal("one spec gave two keys")
	}
	if busybox.Key(DefaultMirror) == busybox.Key("http://other.example/debian") {
		t.Error("a Debian image's key ignores the mirror")
	}
	pause, _ := Find(PauseRef)
	if pause.Key(DefaultMirror) != pause.Key("http://other.example/debian") {
		t.Error("a Go program's key depends on the Debian mirror")
	}
	onDemand := busybox
	onDemand.OnDemand = true
	if onDemand.Key(DefaultMirror) != busybox.Key(DefaultMirror) {
		t.Error("OnDemand, which changes nothing in the image, changed the key")
	}
	changes := map[string]func(*Spec){
		"suite":    func(s *Spec) { s.Debian = &Debian{Suite: "sid", Packages: s.Debian.Packages} },
		"packages": func(s *Spec) { s.Debian = &Debian{Suite: "trixie", Packages: []string{"busybox"}} },
		"config":   func(s *Spec) { s.Config.Cmd = []string{"ash"} },
		"files":    func(s *Spec) { s.Files = map[string]File{"etc/motd": {Content: "hi"}} },
		"strip":    func(s *Spec) { s.Strip = nil },
		"users": func(s *Spec) {
			d := *s.Debian
			d.Users = []User{{Name: "postgres", ID: 999, Home: "/var/lib/postgresql", Shell: "/bin/bash"}}
			s.Debian = &d
		},
		"dirs": func(s *Spec) { s.Dirs = map[string]Dir{"run/db": {UID: 999, GID: 999}} },
	}
	for name, change := range changes {
		s, _ := Find("docker.io/library/busybox:1.37")
		change(&s)
		if s.Key(DefaultMirror) == busybox.Key(DefaultMirror) {
			t.Errorf("changing the %s kept the key", name)
		}
	}
}

func TestValidateRejects(t *testing.T) {
	tests := map[string]func(*Spec){
		"short reference":  func(s *Spec) { s.Ref = "memcached" },
		"no tag":           func(s *Spec) { s.Ref = "docker.io/library/memcached" },
		"no description":   func(s *Spec) { s.Description = "" },
		"two sources":      func(s *Spec) { s.Go = &GoProgram{Name: "x", Source: []byte("package main")} },
		"no packages":      func(s *Spec) { s.Debian = &Debian{Suite: "trixie"} },
		"user name":        func(s *Spec) { s.Config.User = "memcache" },
		"group name":       func(s *Spec) { s.Config.User = "11211:memcache" },
		"root as a file":   func(s *Spec) { s.Files = map[string]File{"/": {Content: "x"}} },
		"link and content": func(s *Spec) { s.Files = map[string]File{"a": {Content: "x", Link: "b"}} },
		"bad pattern":      func(s *Spec) { s.Strip = []string{"usr/share/[doc"} },
		"Debian user's name": func(s *Spec) {
			s.Debian.Users = []User{{Name: "Post gres", ID: 999, Home: "/var/lib/postgresql", Shell: "/bin/sh"}}
		},
		"Debian user's id": func(s *Spec) {
			s.Debian.Users = []User{{Name: "postgres", ID: 0, Home: "/var/lib/postgresql", Shell: "/bin/sh"}}
		},
		"Debian user's home": func(s *Spec) {
			s.Debian.Users = []User{{Name: "postgres", ID: 999, Home: "var/lib/'postgresql'", Shell: "/bin/sh"}}
		},
		"Debian users sharing an id": func(s *Spec) {
			s.Debian.Users = []User{{Name: "a", ID: 999, Home: "/", Shell: "/bin/sh"}, {Name: "b", ID: 999, Home: "/", Shell: "/bin/sh"}}
		},
		"Debian users extracted": func(s *Spec) {
			s.Debian.Extract = true
			s.Debian.Users = []User{{Name: "postgres", ID: 999, Home: "/var/lib/postgresql", Shell: "/bin/sh"}}
		},
		"directory as the root": func(s *Spec) { s.Dirs = map[string]Dir{"/": {}} },
		"directory owner":       func(s *Spec) { s.Dirs = map[string]Dir{"run/db": {UID: -1}} },
		"directory mode":        func(s *Spec) { s.Dirs = map[string]Dir{"run/db": {Mode: fs.ModeDir | 0o755}} },
	}
	for name, change := range tests {
		t.Run(name, func(t *testing.T) {
			s := debianSpec()
			change(&s)
			if err := s.Validate(); err == nil {
				t.Error("valid, want an error")
			}
		})
	}
}
