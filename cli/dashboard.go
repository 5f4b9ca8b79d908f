package cli

import (
	"fmt"
	"net"
	"os/exec"
	"runtime"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/kinetic-run/kinetic/backend"
	"github.com/kinetic-run/kinetic/backend/provision"
	"github.com/kinetic-run/kinetic/config"
	"github.com/kinetic-run/kinetic/dashboard"
)

// dashboardCmd is one `kinetic dashboard`: its flags.
type dashboardCmd struct {
	g      *Globals
	f      jobFlags
	port   int
	host   string
	openIt bool
}

func newDashboardCmd(g *Globals) *cobra.Command {
	d := &dashboardCmd{g: g}
	cmd := &cobra.Command{
		Use:   "dashboard [--port P] [--open]",
		Short: "Serve a web dashboard of the store's jobs and batches (on 127.0.0.1, with an access token in the URL)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return d.run(cmd) },
	}
	d.f.add(cmd)
	cmd.Flags().IntVar(&d.port, "port", 0, "TCP port to serve on (0: any free port)")
	cmd.Flags().StringVar(&d.host, "address", "127.0.0.1", "address to listen on (127.0.0.1: only this machine)")
	cmd.Flags().BoolVar(&d.openIt, "open", false, "open the dashboard in the browser")
	cmd.Flags().MarkHidden("json")
	return cmd
}

func (d *dashboardCmd) run(cmd *cobra.Command) error {
	if d.port < 0 || d.port > 65535 {
		return fmt.Errorf("--port %d: give a TCP port from 1 to 65535 (or 0 for any free port)", d.port)
	}
	e, err := d.f.engine(cmd, d.g)
	if err != nil {
		return err
	}
	defer e.Close()
	token, err := dashboard.NewToken()
	if err != nil {
		return err
	}
	o, err := d.options(token, e.Config().Get(config.Store), e.Config().Get(config.Backend))
	if err != nil {
		return err
	}
	srv, err := dashboard.New(e, o)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(d.host, strconv.Itoa(d.port)))
	if err != nil {
		return fmt.Errorf("--port %d: cannot listen on %s (%v); choose another port, or --port 0 for any free one", d.port, d.host, err)
	}
	d.announce(cmd, ln.Addr().String(), token, o.Store)
	if d.openIt {
		// The opener's command line is readable by every local user (ps): it
		// gets a one-time URL, never the token.
		once, err := srv.OneTimeURL("http://" + ln.Addr().String())
		if err != nil {
			return err
		}
		openBrowser(once)
	}
	return srv.Serve(cmd.Context(), ln)
}

// options are the dashboard's: the store, and the cluster (and Google's view of it on
// GKE) of a backend that runs elsewhere.
func (d *dashboardCmd) options(token, store, backendName string) (dashboard.Options, error) {
	o := dashboard.Options{Token: token, Store: store, Backend: backendName}
	if o.Backend != "" && !backend.SharesFiles(o.Backend) {
		if err := dashboardCluster(d.g, &o, d.f.store); err != nil {
			return o, err
		}
	}
	return o, nil
}

// dashboardCluster fills the cluster page's sources from the backend's provisioner
// (provision.ClusterSource), when it has them.
func dashboardCluster(g *Globals, o *dashboard.Options, store string) error {
	p, ok := provision.Lookup(o.Backend)
	if !ok {
		return nil
	}
	cs, ok := p.(provision.ClusterSource)
	if !ok {
		return nil
	}
	dc, err := cs.DashboardCluster(g.Profile, o.Backend, store)
	o.Cluster, o.ClusterErr, o.Cloud = dc.Target, dc.Err, dc.Cloud
	return err
}

// announce prints the URL (with its token) and what it gives access to.
func (d *dashboardCmd) announce(cmd *cobra.Command, addr, token, store string) {
	fmt.Fprintln(cmd.OutOrStdout(), fmt.Sprintf("http://%s/?token=%s", addr, token))
	fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: dashboard of %s; anyone with this URL can read and cancel its jobs; Ctrl-C stops it\n", store)
	if d.host != "127.0.0.1" && d.host != "localhost" && d.host != "::1" {
		fmt.Fprintf(cmd.ErrOrStderr(), "kinetic: warning: listening on %s, not only this machine: the token is all that keeps others out, and the connection is not encrypted\n", d.host)
	}
}

// openBrowser opens url in the desktop's browser, if there is one; the URL is printed
// either way.
func openBrowser(url string) {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	}
	if p, err := exec.LookPath(name); err == nil {
		c := exec.Command(p, url)
		if c.Start() == nil {
			go c.Wait()
		}
	}
}
