import './base.css';
import './orchestration.css';
