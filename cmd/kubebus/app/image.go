package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubebus/kubebus/kubelet/runtime/containerd"
)

func newImageCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "image", Short: "Manage the images of a node's containerd"}
	var rootDir, endpoint string
	imp := &cobra.Command{
		Use:   "import FILE.tar...",
		Short: "Load docker-archive (docker save) or OCI layout tarballs into a node's containerd",
		Long: `Load image tarballs into the containerd of a kubelet, so pods can use them
without a registry. By default the containerd the kubelet runs under
--root-dir; --container-runtime-endpoint names another socket. The images
are named as in the archive, normalised (busybox:latest becomes
docker.io/library/busybox:latest).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if endpoint == "" {
				endpoint = filepath.Join(rootDir, "containerd", "containerd.sock")
			}
			if _, err := os.Stat(endpoint); err != nil {
				return fmt.Errorf("no containerd at %s (is the kubelet running? see --root-dir and --container-runtime-endpoint): %w", endpoint, err)
			}
			rt, err := containerd.New(cmd.Context(), containerd.Config{Address: endpoint, Dir: filepath.Join(rootDir, "runtime"), Logger: g.logger()})
			if err != nil {
				return err
			}
			defer rt.Close()
			for _, path := range args {
				f, err := os.Open(path)
				if err != nil {
					return err
				}
				imgs, err := rt.ImportImage(cmd.Context(), f)
				f.Close()
				if err != nil {
					return fmt.Errorf("importing %s: %w", path, err)
				}
				for _, img := range imgs {
					fmt.Fprintf(cmd.OutOrStdout(), "imported %s (%s)\n", strings.Join(img.RepoTags, ", "), img.ID)
				}
			}
			return nil
		},
	}
	imp.Flags().StringVar(&rootDir, "root-dir", "/var/lib/kubebus/kubelet", "the kubelet's root dir (the all-in-one's is <data-dir>/kubelet)")
	imp.Flags().StringVar(&endpoint, "container-runtime-endpoint", "", "containerd socket (default <root-dir>/containerd/containerd.sock)")
	cmd.AddCommand(imp)
	return cmd
}
