package gketest

import (
	"context"
	"fmt"
	"strings"
	"time"

	"cloud.google.com/go/longrunning/autogen/longrunningpb"
	"cloud.google.com/go/serviceusage/apiv1/serviceusagepb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// usageServer is the Service Usage API: which services are enabled on a project. A
// project's services start as Options.NewProject says (all of gke.RequiredAPIs
// enabled, or none); enabling runs over OpPolls polls of the operation.
type usageServer struct {
	serviceusagepb.UnimplementedServiceUsageServer
	f *Fake
}

// apiEnabled says whether service (e.g. "container.googleapis.com") is enabled on
// project; mu is held.
func (f *Fake) apiEnabled(project, service string) bool {
	if on, ok := f.apis[project+"/"+service]; ok {
		return on
	}
	return !f.newProject
}

// APIEnabled says whether service is enabled on project.
func (f *Fake) APIEnabled(project, service string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.apiEnabled(project, service)
}

// SetAPI enables or disables service on project, as a user would in the console.
func (f *Fake) SetAPI(project, service string, on bool) {
	f.mu.Lock()
	f.apis[project+"/"+service] = on
	f.mu.Unlock()
}

// splitService splits "projects/P/services/S" into P and S.
func splitService(name string) (string, string, error) {
	parts := strings.Split(name, "/")
	if len(parts) != 4 || parts[0] != "projects" || parts[2] != "services" || parts[1] == "" || parts[3] == "" {
		return "", "", status.Errorf(codes.InvalidArgument, "invalid service name %q: want projects/PROJECT/services/SERVICE", name)
	}
	return parts[1], parts[3], nil
}

func (f *Fake) serviceOf(project, service string) *serviceusagepb.Service {
	st := serviceusagepb.State_DISABLED
	if f.apiEnabled(project, service) {
		st = serviceusagepb.State_ENABLED
	}
	return &serviceusagepb.Service{Name: "projects/" + project + "/services/" + service, Parent: "projects/" + project, State: st}
}

func (s *usageServer) GetService(ctx context.Context, r *serviceusagepb.GetServiceRequest) (*serviceusagepb.Service, error) {
	p, svc, err := splitService(r.GetName())
	if err != nil {
		return nil, err
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	return s.f.serviceOf(p, svc), nil
}

func (s *usageServer) BatchGetServices(ctx context.Context, r *serviceusagepb.BatchGetServicesRequest) (*serviceusagepb.BatchGetServicesResponse, error) {
	if len(r.GetNames()) > 30 {
		return nil, status.Error(codes.InvalidArgument, "at most 30 names")
	}
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	out := &serviceusagepb.BatchGetServicesResponse{}
	for _, n := range r.GetNames() {
		p, svc, err := splitService(n)
		if err != nil {
			return nil, err
		}
		if "projects/"+p != r.GetParent() {
			return nil, status.Errorf(codes.InvalidArgument, "service %s is not under %s", n, r.GetParent())
		}
		out.Services = append(out.Services, s.f.serviceOf(p, svc))
	}
	return out, nil
}

func (s *usageServer) EnableService(ctx context.Context, r *serviceusagepb.EnableServiceRequest) (*longrunningpb.Operation, error) {
	p, svc, err := splitService(r.GetName())
	if err != nil {
		return nil, err
	}
	return s.enable(p, []string{svc}, func() proto.Message {
		return &serviceusagepb.EnableServiceResponse{Service: s.f.serviceOf(p, svc)}
	})
}

func (s *usageServer) BatchEnableServices(ctx context.Context, r *serviceusagepb.BatchEnableServicesRequest) (*longrunningpb.Operation, error) {
	p, ok := strings.CutPrefix(r.GetParent(), "projects/")
	if !ok || p == "" || strings.Contains(p, "/") {
		return nil, status.Errorf(codes.InvalidArgument, "invalid parent %q", r.GetParent())
	}
	if n := len(r.GetServiceIds()); n == 0 || n > 20 {
		return nil, status.Errorf(codes.InvalidArgument, "service_ids: want 1 to 20, got %d", n)
	}
	return s.enable(p, r.GetServiceIds(), func() proto.Message {
		resp := &serviceusagepb.BatchEnableServicesResponse{}
		for _, id := range r.GetServiceIds() {
			resp.Services = append(resp.Services, s.f.serviceOf(p, id))
		}
		return resp
	})
}

// enable starts an operation that enables services on project once done.
func (s *usageServer) enable(project string, services []string, resp func() proto.Message) (*longrunningpb.Operation, error) {
	f := s.f
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, svc := range services {
		if !strings.HasSuffix(svc, ".googleapis.com") {
			return nil, status.Errorf(codes.NotFound, "service %s not found or permission denied", svc)
		}
	}
	f.nextOp++
	name := fmt.Sprintf("operations/acat.p2-%s-%d", project, f.nextOp)
	o := &longrunningpb.Operation{Name: name}
	f.ops[name] = &op{lro: o, target: "projects/" + project, left: f.opPolls, done: func() {
		for _, svc := range services {
			f.apis[project+"/"+svc] = true
			f.readyAt[project+"/"+svc] = time.Now().Add(f.propagation)
		}
		f.finishLRO(o, resp())
	}}
	return proto.Clone(o).(*longrunningpb.Operation), nil
}
