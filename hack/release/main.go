// Command release builds Mooring's release images with their SBOMs and signed
// provenance (internal/release), checks them, and makes a throwaway signing key.
//
//	go run ./hack/release build --key release-key.pem [--out dist/release] [--version v0.2.0] \
//	    [--platforms linux/amd64,linux/arm64] [--images mooring,mooring-portal] [--builder-id URI]
//	go run ./hack/release verify --key dist/release/release.pub dist/release/mooring [dist/release/mooring-portal]
//	go run ./hack/release keygen release-key.pem
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/mooringhq/mooring/internal/release"
)

const usage = `usage:
  release build --key KEY [--out DIR] [--version V] [--platforms P,...] [--images NAME,...] [--builder-id URI]
  release verify --key PUBLIC_KEY LAYOUT...
  release keygen PATH`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = build(os.Args[2:])
	case "verify":
		err = verify(os.Args[2:])
	case "keygen":
		err = keygen(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func build(args []string) error {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	key := fs.String("key", "", "The release's signing key: PEM, PKCS #8 ed25519 or ECDSA P-256 (required).")
	out := fs.String("out", "dist/release", "Output directory.")
	version := fs.String("version", "", "Version linked into the binaries and tagging the images; git describe --tags --always --dirty when empty.")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "Comma-separated platforms.")
	images := fs.String("images", "", "Comma-separated image names to build (all when empty): "+imageNames())
	builderID := fs.String("builder-id", release.DefaultBuilderID, "The provenance's builder id.")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *key == "" {
		return errors.New("--key is required (make one with: go run ./hack/release keygen PATH)")
	}
	signer, err := release.LoadSigner(*key)
	if err != nil {
		return err
	}
	src, err := release.ReadSource()
	if err != nil {
		return err
	}
	if *version != "" {
		src.Version = *version
	}
	plats, err := release.ParsePlatforms(strings.Split(*platforms, ","))
	if err != nil {
		return err
	}
	selected, err := selectImages(*images)
	if err != nil {
		return err
	}
	return release.Release(selected, release.Options{
		Out: *out, Platforms: plats, Source: src, Key: signer, BuilderID: *builderID, Log: os.Stdout,
	})
}

func imageNames() string {
	var names []string
	for _, img := range release.Images {
		names = append(names, img.Name)
	}
	return strings.Join(names, ",")
}

func selectImages(list string) ([]release.Image, error) {
	if list == "" {
		return release.Images, nil
	}
	var out []release.Image
	for _, name := range strings.Split(list, ",") {
		i := slices.IndexFunc(release.Images, func(img release.Image) bool { return img.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("no image %q; the images are %s", name, imageNames())
		}
		out = append(out, release.Images[i])
	}
	return out, nil
}

func verify(args []string) error {
	fs := flag.NewFlagSet("verify", flag.ExitOnError)
	key := fs.String("key", "", "The release's public key (PEM PUBLIC KEY, the release's release.pub).")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *key == "" || fs.NArg() == 0 {
		return errors.New("usage: release verify --key PUBLIC_KEY LAYOUT [LAYOUT]")
	}
	data, err := os.ReadFile(*key)
	if err != nil {
		return err
	}
	pub, err := release.ParsePublicKeyPEM(data)
	if err != nil {
		return err
	}
	for _, dir := range fs.Args() {
		v, err := release.Verify(dir, pub)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		fmt.Printf("%s: %s index %s: provenance signed by the key (builder %s, %s at %s)\n", dir, v.Ref, v.Index,
			v.Statement.Predicate.RunDetails.Builder.ID, v.Statement.Predicate.BuildDefinition.ExternalParameters.Package,
			v.Statement.Predicate.BuildDefinition.ExternalParameters.Revision)
		for _, img := range v.Images {
			fmt.Printf("  %s %s: SBOM lists the %d modules its binary links (%s)\n", img.Platform, img.Manifest, len(img.BuildInfo.Deps), img.BuildInfo.GoVersion)
		}
	}
	return nil
}

func keygen(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: release keygen PATH")
	}
	key, err := release.GenerateKey(args[0])
	if err != nil {
		return err
	}
	pub, err := release.PublicKeyPEM(key.Public())
	if err != nil {
		return err
	}
	fmt.Printf("release: wrote ed25519 key %s (mode 0600); its public key:\n%s", args[0], pub)
	return nil
}
